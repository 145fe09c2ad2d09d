"""
The number of triplets: k-NN accuracy and path time
===================================================

:class:`~sklearn_safescreen.metric_learning.SafeMetricLearner` builds its triplets from
the ``k`` nearest same-class and other-class neighbours of each sample, about
:math:`n k^2` of them. Yoshida et al. (2019, Sec. 7.5) find that more triplets often
give a better k-NN classifier, and that safe triplet screening makes them affordable:
the time of a regularisation path grows with ``k``, and so does what screening saves.

For each ``k``, a warm-started path from the critical value :math:`\\lambda_L` down by
a fixed ratio is fitted twice, with the estimator's screening defaults and with
``screening=None, range_screening=False`` (the same metrics); the ``alpha`` with the
best validation accuracy of each m-NN classifier is chosen, and its test accuracy shown.

This example is a reduced version of the benchmark
``benchmarks/bench_metric_learning_usefulness.py``, whose full table (digits and a
60,000-sample mnist-shaped set, six values of ``k``, 10/20/30-NN) is in
``doc/benchmarks.md``: here only digits, three values of ``k``, 10/20-NN and a coarser
path (13 values by a ratio of 0.5 instead of 41 by 0.8, down to the same depth), so that
it runs in about half a minute. The digits test part has 360 samples, so one sample is
0.3 points of accuracy: on this set the accuracy hardly changes with ``k``, while
screening saves time once there are several thousand triplets. On the mnist-shaped set
of the benchmark, more triplets give a *worse* classifier beyond ``k=3``, and from
``k=5`` on its warm-started fits take about two iterations each, too few for screening
to pay for itself. The times are process CPU seconds, so they depend on the machine and
on what else runs on it.
"""

import time

import matplotlib.pyplot as plt
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier

from sklearn_safescreen.metric_learning import SafeMetricLearner
from sklearn_safescreen.path import critical_value

X, y = load_digits(return_X_y=True)
X = X / 16.0
Xs, Xte, ys, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
Xtr, Xva, ytr, yva = train_test_split(Xs, ys, test_size=0.25, stratify=ys, random_state=0)

ks = [1, 3, 8]  # triplet neighbours per side
ms = [10, 20]  # the k-NN classifiers scored
ratio, n_steps = 0.5, 13  # the path: lambda_L * 0.5**(1..13), down to 1.2e-4 lambda_L
configs = {"screened": {}, "no screening": dict(screening=None, range_screening=False)}


def path(k, params, score):
    """Fit the path; its CPU time (validation scoring excluded) and, if ``score``, the
    best validation accuracy of each m-NN with its learned map."""
    learner = SafeMetricLearner(k=k, tol=1e-6, warm_start=True, **params)
    start = time.process_time()
    lam_L = critical_value(learner, Xtr, ytr)
    best, scoring = {m: (-1.0, None) for m in ms}, 0.0
    for step in range(1, n_steps + 1):
        learner.set_params(alpha=lam_L * ratio**step).fit(Xtr, ytr)
        if score:
            t0 = time.process_time()
            Ztr, Zva = learner.transform(Xtr), learner.transform(Xva)
            for m in ms:
                acc = KNeighborsClassifier(m).fit(Ztr, ytr).score(Zva, yva)
                if acc > best[m][0]:
                    best[m] = (acc, learner.components_.copy())
            scoring += time.process_time() - t0
    return time.process_time() - start - scoring, best, learner.n_triplets_


times = {name: [] for name in configs}
test_acc = {m: [] for m in ms}
for k in ks:
    for name, params in configs.items():
        seconds, best, n_triplets = path(k, params, score=name == "screened")
        times[name].append(seconds)
        if name == "screened":
            for m in ms:
                L = best[m][1]
                knn = KNeighborsClassifier(m).fit(Xtr @ L.T, ytr)
                test_acc[m].append(knn.score(Xte @ L.T, yte))
    print(f"k={k}: {n_triplets} triplets, path {times['screened'][-1]:.2f} s screened, "
          f"{times['no screening'][-1]:.2f} s without; test "
          + ", ".join(f"{m}-NN {test_acc[m][-1]:.3f}" for m in ms))

fig, ax = plt.subplots(1, 2, figsize=(9, 3.6))
for m, marker in zip(ms, "os", strict=True):
    ax[0].plot(ks, test_acc[m], marker=marker, label=f"{m}-NN, learned metric")
    euclid = KNeighborsClassifier(m).fit(Xtr, ytr).score(Xte, yte)
    ax[0].axhline(euclid, ls="--", color=ax[0].lines[-1].get_color(), lw=1,
                  label=f"{m}-NN, Euclidean")
ax[0].set_xlabel("triplet neighbours k")
ax[0].set_ylabel("test accuracy")
ax[0].legend(fontsize=8)
for name, marker in zip(configs, "o^", strict=True):
    ax[1].plot(ks, times[name], marker=marker, label=name)
ax[1].set_xlabel("triplet neighbours k")
ax[1].set_ylabel("path time (CPU s)")
ax[1].legend(fontsize=8)
fig.tight_layout()
plt.show()
