"""
The path of the 1-norm SVM
==========================

:class:`~sklearn_safescreen.SafeLPSVC` fits the L1-penalised hinge-loss SVM, a linear
program whose solution is exactly sparse in the features (most :math:`w_j = 0`) and in
the samples (most dual variables at 0, beyond the margin, or at the end of their box,
inside it). This example walks a path of ``alpha`` from ``alpha_max_``, where every
weight is 0, down two decades, and draws the weights entering the model as ``alpha``
falls, with the share of the features and samples that safe screening (Shibagaki et
al. 2016, section 5) proved fixed at each value, and the time against the same path
without screening.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen import SafeLPSVC
from sklearn_safescreen.path import estimator_path

X, y = make_classification(n_samples=400, n_features=300, n_informative=8,
                           n_redundant=0, flip_y=0.05, random_state=0)
X = StandardScaler().fit_transform(X)

# %%
# The path
# --------
# 30 values from ``alpha_max_`` down to ``alpha_max_ / 100``, each fit warm-started from
# the previous solution, which also screens the next problem. The same path without
# screening gives the same objectives (every fit is certified to a relative duality gap
# of 1e-9); only the time differs.

start = time.perf_counter()
res = estimator_path(SafeLPSVC(), X, y, n_values=30, eps=1e-2)
t_screened = time.perf_counter() - start
start = time.perf_counter()
plain = estimator_path(SafeLPSVC(screening=None), X, y, n_values=30, eps=1e-2)
t_plain = time.perf_counter() - start
print(f"30 values: {t_screened:.2f} s with screening, {t_plain:.2f} s without; "
      f"largest certified relative gap {max(res.dual_gaps.max(), plain.dual_gaps.max()):.1e}")

coefs = np.vstack([c.ravel() for c in res.coefs])  # (values, features)
features = [r.counts["features"] for r in res.reports]
samples = [r.counts["samples"] for r in res.reports]
print(f"{'alpha':>9} {'non-zero':>9} {'features screened':>18} {'samples fixed':>14}")
for a, c, f, s in list(zip(res.values, coefs, features, samples, strict=True))[::4]:
    print(f"{a:>9.3g} {np.count_nonzero(c):>9d} {f.n_screened / f.n_variables:>18.1%} "
          f"{s.n_screened / s.n_variables:>14.1%}")

# %%
# The weights entering, and what the rules proved
# -----------------------------------------------

ratio = res.values / res.values[0]
fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
active = np.flatnonzero(np.any(coefs != 0, axis=0))
top.plot(ratio, coefs[:, active], lw=1)
top.set_ylabel("coef_")
top.set_title(f"{active.size} of {X.shape[1]} weights are ever non-zero")
bottom.plot(ratio, [f.n_screened / f.n_variables for f in features], "C0o-", ms=3,
            label="features proven zero")
bottom.plot(ratio, [s.n_screened / s.n_variables for s in samples], "C1s-", ms=3,
            label="samples proven at 0 or at the box")
bottom.plot(ratio, (coefs == 0).mean(axis=1), "k--", lw=1, label="zero weights")
bottom.set_xscale("log")
bottom.invert_xaxis()
bottom.set_xlabel("alpha / alpha_max")
bottom.set_ylabel("fraction")
bottom.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# On this dense problem the rules prove little below ``alpha_max_``: the polytopes the
# previous solution defines are wide (a linear program has no strong convexity to bound
# them), and a path stops running a kind of rule once an event fixes under 1% of its
# variables or costs more than the solve after it, so the two paths take about the same
# time. What keeps each linear program small is the solver's column and row generation:
# it starts from the previous support and margin samples and adds only the features and
# samples that the current point shows to matter. On wide sparse data the rules fix more
# (``doc/benchmarks.md``, "LP-SVM path: the core against the full LP").
