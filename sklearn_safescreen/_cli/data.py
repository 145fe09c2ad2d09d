"""The command line's data: shipped data sets and svmlight files, subsets, densifying."""

from __future__ import annotations

import os

import numpy as np

from .parser import DATASETS


def _load(args):
    """(X, y, description, continuous): ``continuous`` when the target is a regression
    target (a shipped regression dataset, or a file whose target is continuous)."""
    from sklearn import datasets as skd
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    from sklearn.utils.multiclass import type_of_target

    from .. import datasets as ours

    name = args.dataset or {"lad": "diabetes", "metric": "wine"}.get(args.estimator,
                                                                     "synthetic")
    if name in DATASETS:
        if name == "breast_cancer":
            X, y = ours.load_standardized_breast_cancer()
        elif name in ("iris", "wine", "diabetes"):
            X, y = getattr(skd, f"load_{name}")(return_X_y=True)
            X = StandardScaler().fit_transform(X)
        elif name == "digits":
            X, y = skd.load_digits(return_X_y=True)
            X = MinMaxScaler().fit_transform(X)
        elif name == "synthetic":
            X, y = skd.make_classification(n_samples=20000, n_features=50, n_informative=20,
                                           flip_y=0.05, random_state=0)
        elif name == "ogawa_toy":
            X, y = ours.make_ogawa_toy(random_state=0)
        else:
            X, y = ours.make_wang_toy(int(name[-1]), random_state=0)
        desc = DATASETS[name].split(": ", 1)[1].split(", the benchmark")[0]
        continuous = DATASETS[name].startswith("regression")
    else:
        if not os.path.isfile(name):
            raise ValueError(f"--dataset {name!r} is neither a shipped dataset "
                             f"({', '.join(DATASETS)}) nor a readable file")
        try:
            X, y = skd.load_svmlight_file(name)
        except (ValueError, OSError, UnicodeDecodeError, RuntimeError) as exc:
            raise ValueError(f"cannot read {name} as a LIBSVM/svmlight file: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                             ) from exc
        if X.shape[0] < 2:
            raise ValueError(f"{name} has {X.shape[0]} sample(s); need at least 2")
        # the format is always read as a sparse matrix: say how sparse the data is
        density = X.nnz / max(X.shape[0] * X.shape[1], 1)
        desc = (f"{os.path.basename(name)}, {X.shape[0]} x {X.shape[1]}, svmlight file, "
                f"{density:.1%} non-zero")
        continuous = type_of_target(y) == "continuous"
    return X, y, desc, continuous


def _choose_estimator(args, continuous: bool, desc: str) -> None:
    """Set ``args.estimator``: SafeLAD by default on a regression target, and a
    classifier is refused on one (it would treat every target value as a class)."""
    if args.estimator is None:
        args.estimator = "lad" if continuous else "svc"
        if continuous:
            print(f"note: {desc.split(',')[0]} has a regression target: using --estimator "
                  "lad (SafeLAD); SafeSVC is a classifier")
    elif continuous and args.estimator != "lad":
        raise ValueError(f"{desc.split(',')[0]} has a regression (continuous) target, but "
                         f"--estimator {args.estimator} is a classifier; use --estimator lad")


def _subsample(X, y, n: int, stratify: bool):
    """``n`` samples drawn with a fixed seed; for a classifier, each class keeps its share
    (largest remainders, at least one sample of every class when ``n`` allows), so that a
    small subset still has every class in every training fold."""
    rng = np.random.RandomState(0)
    if not stratify:
        return np.sort(rng.choice(X.shape[0], n, replace=False))
    classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    share = n * counts / counts.sum()
    take = np.minimum(np.floor(share).astype(int), counts)
    if n >= classes.size:
        take = np.maximum(take, 1)
    while take.sum() > n:  # (only after raising empty shares to one)
        take[np.argmax(take)] -= 1
    order = np.argsort(-(share - take), kind="stable")
    for c in order[:n - take.sum()]:  # the largest remainders get the samples left
        take[c] += 1
    # one loop per class (not per sample): a random subset of each class
    idx = [rng.choice(np.flatnonzero(codes == c), take[c], replace=False)
           for c in range(classes.size)]
    return np.sort(np.concatenate(idx))


def _check_classes(y, subset: bool) -> None:
    """Refuse data on which some training fold would lack a class (its fits fail and
    its scores are nan): a class needs at least two samples, which stratified folds
    put in different test folds."""
    classes, counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        raise ValueError("the dataset has a single class")
    rare = counts.argmin()
    if counts[rare] < 2:
        where = "the --max-samples subset" if subset else "the dataset"
        raise ValueError(f"class {classes[rare]} has a single sample in {where}: the "
                         "fold that tests it would train without it and fail; use more "
                         "samples")


def _densify(X, name: str):
    """The dense array of a sparse ``X``, for an estimator that needs dense input; refused
    with the figure when it would take more than a quarter of the available memory."""
    from .._utils.memory import check_memory

    check_memory(X.shape[0] * X.shape[1] * np.dtype(np.float64).itemsize,
                 f"{name} needs dense input: the {X.shape[0]} x {X.shape[1]} data densified",
                 "use --max-samples, or --estimator svc or lad (which take sparse input)",
                 fraction=0.25)
    return X.toarray()


