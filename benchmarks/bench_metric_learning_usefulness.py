"""SafeMetricLearner's usefulness at scale: k-NN accuracy, and the number of triplets.

(1) k-NN test accuracy on two synthetic sets, reproducible from a seed (no downloads),
    each scaled to [-1, 1] per feature by a MinMaxScaler fitted on the training part of
    a 70/30 stratified split (seed 0):

    * mnist-shaped: ``make_classification(60000 x 32, 20 informative, 4 redundant,
      10 classes, 2 clusters per class, random_state=0)``;
    * letter-shaped: ``make_classification(20000 x 16, 12 informative, 2 redundant,
      26 classes, 1 cluster per class, random_state=0)`` (the UCI letter set's shape).

    Rows: Euclidean 5-NN; SafeMetricLearner(k=5) + 5-NN with alpha chosen by 3-fold
    RegularizationPathCV over ``metric__alpha`` on a geometric grid from the critical
    value down (``N_VALUES`` values, ratio ``RATIO``); scikit-learn's
    NeighborhoodComponentsAnalysis + 5-NN, which keeps n x n matrices in every
    iteration, fitted on a stratified subsample of ``NCA_N`` training samples, next to
    Euclidean 5-NN and SafeMetricLearner on that same subsample.

(2) The number of triplets (Yoshida et al. 2019, Sec. 7.5, Fig. 12): for triplet
    neighbours k in ``KS``, a warm-started path from the critical value down by
    ``PATH_RATIO`` for ``PATH_STEPS`` steps (the paper's smoothed hinge, gamma = 0.05,
    relative gap 1e-6), with RRPB+PGB and range screening (``range_screening=True``),
    with ``range_screening=False`` and with ``screening=None, range_screening=False``;
    the alpha of each m-NN (m = 10, 20, 30) is
    chosen on a validation split, and its test accuracy is reported. On the mnist-shaped
    set (a 10,000-sample stratified subset of its training part: 7,000 to learn, 3,000
    to validate; tested on the whole test part) and on scikit-learn's bundled digits
    (1797 x 64, scaled to [0, 1]; 60/20/20).

Times are process CPU seconds, with one BLAS thread. Writes the section "SafeMetricLearner:
k-NN accuracy at scale and the number of triplets" of doc/benchmarks.md and prints it.

Run: python benchmarks/bench_metric_learning_usefulness.py [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits, make_classification
from sklearn.model_selection import train_test_split
from sklearn.neighbors import (
    KNeighborsClassifier,
    NearestNeighbors,
    NeighborhoodComponentsAnalysis,
)
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler

from sklearn_safescreen.base import single_blas_thread
from sklearn_safescreen.metric_learning import SafeMetricLearner
from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.path import critical_value

SECTION = "## SafeMetricLearner: k-NN accuracy at scale and the number of triplets"
N_VALUES, RATIO = 15, 0.5  # the CV grid: lambda_L * 0.5**(1..15), down to 3e-5 lambda_L
NCA_N = 5000
KS = (1, 2, 3, 5, 8, 12)
PATH_RATIO, PATH_STEPS = 0.8, 41  # down to 1.1e-4 lambda_L
MS = (10, 20, 30)
CONFIGS = {"screened": dict(range_screening=True), "no range": dict(range_screening=False),
           "none": dict(screening=None, range_screening=False)}


def scaled_split(X, y):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    scaler = MinMaxScaler((-1, 1)).fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def mnist_shaped(n=60000):
    return make_classification(n_samples=n, n_features=32, n_informative=20,
                               n_redundant=4, n_classes=10, n_clusters_per_class=2,
                               random_state=0)


def letter_shaped(n=20000):
    return make_classification(n_samples=n, n_features=16, n_informative=12, n_redundant=2,
                               n_classes=26, n_clusters_per_class=1, random_state=0)


# ------------------------------------------------------------------ (1) accuracy ---
def _cv_metric(Xtr, ytr, n_values):
    """SafeMetricLearner(k=5) + 5-NN, alpha by 3-fold RegularizationPathCV; the CPU time
    includes the critical value that places the grid."""
    t0 = time.process_time()
    lam_L = critical_value(SafeMetricLearner(k=5), Xtr, ytr)
    pipe = Pipeline([("metric", SafeMetricLearner(k=5, tol=1e-5)),
                     ("knn", KNeighborsClassifier(n_neighbors=5))])
    values = lam_L * RATIO ** np.arange(1, n_values + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # max_iter notes at the smallest alpha
        cv = RegularizationPathCV(pipe, param_name="metric__alpha", values=values,
                                  cv=3).fit(Xtr, ytr)
    alpha = cv.best_params_["metric__alpha"]
    return cv, time.process_time() - t0, alpha, alpha / lam_L


def accuracy_rows(name, X, y, quick):
    Xtr, Xte, ytr, yte = scaled_split(X, y)
    n_values = 6 if quick else N_VALUES
    rows = []

    def euclid(Xa, ya):
        t0 = time.process_time()
        knn = KNeighborsClassifier(n_neighbors=5).fit(Xa, ya)
        seconds = time.process_time() - t0  # the fit only, as in the other rows
        return knn.score(Xte, yte), seconds

    acc, t = euclid(Xtr, ytr)
    rows.append(("Euclidean 5-NN", len(ytr), acc, t, ""))
    cv, t, alpha, rel = _cv_metric(Xtr, ytr, n_values)
    rows.append(("SafeMetricLearner(k=5) + 5-NN, alpha by 3-fold CV", len(ytr),
                 cv.score(Xte, yte), t, f"{alpha:.3g} ({rel:.2g} lambda_L)"))
    nca_n = 1500 if quick else NCA_N
    Xs, _, ys, _ = train_test_split(Xtr, ytr, train_size=nca_n, stratify=ytr,
                                    random_state=0)
    acc, t = euclid(Xs, ys)
    rows.append(("Euclidean 5-NN", nca_n, acc, t, ""))
    cv, t, alpha, rel = _cv_metric(Xs, ys, n_values)
    rows.append(("SafeMetricLearner(k=5) + 5-NN, alpha by 3-fold CV", nca_n,
                 cv.score(Xte, yte), t, f"{alpha:.3g} ({rel:.2g} lambda_L)"))
    t0 = time.process_time()
    nca = Pipeline([("nca", NeighborhoodComponentsAnalysis(random_state=0, max_iter=100)),
                    ("knn", KNeighborsClassifier(n_neighbors=5))]).fit(Xs, ys)
    rows.append(("NCA (max_iter=100) + 5-NN", nca_n, nca.score(Xte, yte),
                 time.process_time() - t0, ""))
    for r in rows:
        print(f"{name}: {r[0]} on {r[1]}: accuracy {r[2]:.4f}, fit {r[3]:.1f} s {r[4]}",
              flush=True)
    return rows


# ------------------------------------------------------------ (2) the triplets ---
def knn_predict(Ztr, ytr, Zq, ms):
    """Majority votes of the m nearest training points for every m in ``ms`` from one
    neighbour search (ties to the smallest label, as KNeighborsClassifier)."""
    idx = NearestNeighbors(n_neighbors=max(ms)).fit(Ztr).kneighbors(
        Zq, return_distance=False)
    classes, codes = np.unique(ytr, return_inverse=True)
    labels = codes[idx]
    out = {}
    for m in ms:
        counts = np.zeros((len(Zq), len(classes)))
        np.add.at(counts, (np.arange(len(Zq))[:, None], labels[:, :m]), 1)
        out[m] = classes[counts.argmax(axis=1)]
    return out


def walk(Xa, ya, k, config, n_steps, Xv=None, yv=None):
    """A warm-started path from lambda_L down by PATH_RATIO; CPU seconds of the path
    (the triplets and the critical value included, the validation scoring not), and per
    step the validation accuracies and the learned map."""
    ml = SafeMetricLearner(k=k, tol=1e-6, max_iter=10**6, warm_start=True,
                           **CONFIGS[config])
    cpu0 = time.process_time()
    lam_L = critical_value(ml, Xa, ya)  # builds the triplets, handed to the first fit
    scoring, steps, rates, iters = 0.0, [], [], 0
    for j in range(1, n_steps + 1):
        ml.set_params(alpha=lam_L * PATH_RATIO**j).fit(Xa, ya)
        rates.append(ml.screening_report_.screening_rate)
        iters += ml.n_iter_
        if Xv is not None:
            t0 = time.process_time()
            pred = knn_predict(ml.transform(Xa), ya, ml.transform(Xv), MS)
            steps.append(({m: np.mean(pred[m] == yv) for m in MS},
                          ml.components_.copy(), ml.alpha / lam_L))
            scoring += time.process_time() - t0
    return dict(cpu=time.process_time() - cpu0 - scoring, steps=steps,
                n_triplets=ml.n_triplets_, rate=float(np.mean(rates)),
                iters_per_fit=iters / n_steps)


def triplet_study(name, Xa, ya, Xv, yv, Xt, yt, quick):
    n_steps = 12 if quick else PATH_STEPS
    rows = []
    for k in KS[:4] if quick else KS:
        scr = walk(Xa, ya, k, "screened", n_steps, Xv, yv)
        norange = walk(Xa, ya, k, "no range", n_steps)
        none = walk(Xa, ya, k, "none", n_steps)
        row = dict(k=k, n_triplets=scr["n_triplets"], t_scr=scr["cpu"],
                   t_norange=norange["cpu"], t_none=none["cpu"], rate=scr["rate"],
                   iters=scr["iters_per_fit"])
        for m in MS:
            best = max(range(n_steps), key=lambda s, m=m: scr["steps"][s][0][m])
            val, L, rel = scr["steps"][best]
            row[m] = (np.mean(knn_predict(Xa @ L.T, ya, Xt @ L.T, (m,))[m] == yt), val[m],
                      rel)
        rows.append(row)
        print(f"{name} k={k}: {row['n_triplets']} triplets, path {row['t_scr']:.1f} s "
              f"screened / {row['t_norange']:.1f} s without range screening / "
              f"{row['t_none']:.1f} s none, mean rate {row['rate']:.2f}, test "
              + ", ".join(f"{m}-NN {row[m][0]:.4f} (alpha {row[m][2]:.2g} lambda_L)"
                          for m in MS), flush=True)
    euclid = knn_predict(Xa, ya, Xt, MS)
    return rows, {m: np.mean(euclid[m] == yt) for m in MS}


def mnist_subset(n=10000):
    Xtr, Xte, ytr, yte = scaled_split(*mnist_shaped())
    Xs, _, ys, _ = train_test_split(Xtr, ytr, train_size=n, stratify=ytr, random_state=0)
    Xa, Xv, ya, yv = train_test_split(Xs, ys, test_size=0.3, stratify=ys, random_state=0)
    return Xa, ya, Xv, yv, Xte, yte


def digits_split():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    Xs, Xt, ys, yt = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    Xa, Xv, ya, yv = train_test_split(Xs, ys, test_size=0.25, stratify=ys, random_state=0)
    return Xa, ya, Xv, yv, Xt, yt


# -------------------------------------------------------------------- report ---
def section(acc, study, load, quick, wall) -> str:
    lines = [
        SECTION,
        "",
        f"Measured {datetime.date.today().isoformat()} on {platform.machine()}, "
        f"{os.cpu_count()} cores shared with other jobs (1-min load average {load[0]:.1f} "
        f"at the start, {load[1]:.1f} at the end), Python {platform.python_version()}, "
        "one BLAS thread, by `python benchmarks/bench_metric_learning_usefulness.py"
        f"{' --quick' if quick else ''}` ({wall / 60:.0f} min wall). Times are process "
        "CPU seconds. The data sets are synthetic and reproducible from a seed (the "
        "script's docstring gives them).",
        "",
        "### (1) k-NN test accuracy at scale (70/30 stratified split, seed 0)",
        "",
        f"SafeMetricLearner: k=5 triplet neighbours per side, relative gap 1e-5; alpha "
        f"chosen by 3-fold `RegularizationPathCV` over `metric__alpha` on "
        f"lambda_L * {RATIO}^(1..{6 if quick else N_VALUES}) (lambda_L the critical value "
        "of the training set); its time is the whole search: the critical value, a "
        "warm-started path per fold and the refit. "
        f"NCA (scikit-learn's NeighborhoodComponentsAnalysis, max_iter=100) keeps n x n "
        f"matrices in every iteration, so it is fitted on a stratified subsample of "
        f"{1500 if quick else NCA_N:,} training samples, next to the other two methods "
        "on that same subsample; all rows are scored on the whole test part.",
        "",
        "| data | method | training samples | test accuracy | fit (CPU s) | chosen alpha |",
        "|---|---|---|---|---|---|",
    ]
    for name, rows in acc:
        for method, n, score, t, alpha in rows:
            lines.append(f"| {name} | {method} | {n:,} | {score:.4f} | {t:.1f} | {alpha} |")
    lines += [
        "",
        "### (2) the number of triplets (Yoshida et al. 2019, Sec. 7.5, Fig. 12)",
        "",
        f"For each triplet neighbour k, a warm-started path from lambda_L down by "
        f"{PATH_RATIO} for {12 if quick else PATH_STEPS} steps (to "
        f"{PATH_RATIO ** (12 if quick else PATH_STEPS):.1e} lambda_L; smoothed hinge, "
        "gamma = 0.05, relative gap 1e-6), with the estimator's screening defaults "
        "(RRPB+PGB with range screening), with `range_screening=False` (RRPB+PGB alone, "
        "the paper's path setting) and with `screening=None, range_screening=False`; "
        "the same steps, the same metrics. The path time includes building the triplets "
        "and the critical value. For each m-NN (m = 10, 20, 30) the alpha with the best "
        "validation accuracy along the path is chosen and its test accuracy reported "
        "(alpha as a fraction of lambda_L in brackets).",
        "",
        "| data | k | triplets | path screened (s) | without range screening (s) | "
        "unscreened (s) | unscreened / screened | mean screening rate | iterations per "
        "fit | 10-NN test | 20-NN test | 30-NN test |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, (rows, euclid) in study.items():
        lines.append(f"| {name} | Euclidean | | | | | | | | {euclid[10]:.4f} | "
                     f"{euclid[20]:.4f} | {euclid[30]:.4f} |")
        for r in rows:
            lines.append(
                f"| {name} | {r['k']} | {r['n_triplets']:,} | {r['t_scr']:.1f} | "
                f"{r['t_norange']:.1f} | {r['t_none']:.1f} | "
                f"{r['t_none'] / r['t_scr']:.2f}x | {r['rate']:.2f} | {r['iters']:.1f} | "
                + " | ".join(f"{r[m][0]:.4f} ({r[m][2]:.1g})" for m in MS) + " |")
    lines += ["", *reading(acc, study)]
    return "\n".join(lines) + "\n"


def reading(acc, study) -> list[str]:
    """What the tables say, from the measured numbers."""
    out = ["Reading the tables:", ""]
    for name, rows in acc:
        full_e, full_s, sub_e, sub_s, nca = rows
        out.append(
            f"* {name}: the learned metric changes 5-NN test accuracy by "
            f"{100 * (full_s[2] - full_e[2]):+.1f} points on {full_s[1]:,} samples "
            f"({full_e[2]:.3f} -> {full_s[2]:.3f}; the whole cross-validated search "
            f"{full_s[3]:.0f} s); on the {sub_s[1]:,}-sample subsample "
            f"{100 * (sub_s[2] - sub_e[2]):+.1f} points, NCA {100 * (nca[2] - sub_e[2]):+.1f}"
            f" points, NCA's one fit taking {nca[3] / sub_s[3]:.1f}x the CPU time of "
            "SafeMetricLearner's whole search.")
    for name, (rows, euclid) in study.items():
        best = max(rows, key=lambda r: r[20][0])
        first, last = rows[0], rows[-1]
        out.append(
            f"* {name}: 20-NN test accuracy is best at k={best['k']} ({best[20][0]:.3f}; "
            f"k={first['k']}: {first[20][0]:.3f}, k={last['k']}: {last[20][0]:.3f}, "
            f"Euclidean {euclid[20]:.3f}). The unscreened path takes "
            f"{first['t_none'] / first['t_scr']:.2f}x the screened one's time at "
            f"k={first['k']} and {last['t_none'] / last['t_scr']:.2f}x at k={last['k']} "
            f"(without range screening: {first['t_none'] / first['t_norange']:.2f}x and "
            f"{last['t_none'] / last['t_norange']:.2f}x), with "
            f"{np.mean([r['iters'] for r in rows]):.1f} solver iterations per warm-started "
            "fit on average.")
    out += [
        "",
        "Screening removes triplets from the solver's iterations; a warm-started fit that "
        "needs one or two iterations has little of that work, while the screening itself "
        "(the rules at the start of each fit, the certificate over all triplets at its "
        "end, and, with range screening, the update of the stored ranges) costs a pass or "
        "two over all triplets per fit. Where the fits iterate more (digits, 64 features), "
        "the saving shows; where they hardly iterate (the mnist-shaped set), screening "
        "costs more than it saves. Whether more triplets give a better classifier, the "
        "paper's finding (Sec. 7.5), depends on the data: see the lines above.",
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run on small sets")
    args = parser.parse_args()
    quick = args.quick
    load0, wall0 = os.getloadavg()[0], time.perf_counter()
    with single_blas_thread():
        acc = [("mnist-shaped 60,000 x 32, 10 classes",
                accuracy_rows("mnist", *mnist_shaped(6000 if quick else 60000), quick)),
               ("letter-shaped 20,000 x 16, 26 classes",
                accuracy_rows("letter", *letter_shaped(4000 if quick else 20000), quick))]
        study = {}
        study["mnist-shaped, 7,000 / 3,000 / 18,000"] = triplet_study(
            "mnist", *mnist_subset(3000 if quick else 10000), quick)
        study["digits 1,077 / 360 / 360"] = triplet_study("digits", *digits_split(), quick)
    text = section(acc, study, (load0, os.getloadavg()[0]), quick,
                   time.perf_counter() - wall0)
    print(text)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _doc import write_section

    write_section(SECTION, text)


if __name__ == "__main__":
    main()
