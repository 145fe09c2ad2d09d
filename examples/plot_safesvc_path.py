"""
Walking a SafeSVC regularisation path
=====================================

This example walks a linear SafeSVC along nine values of ``C`` with warm starts, prints
per value the share of samples screened and the certified duality gap, and draws the
screening rate and the time of each fit against the same path without screening.

Each solution is the reference that screens the next problem: samples proven to lie
strictly outside the margin (alpha = 0) or strictly inside it (alpha = C) leave the
optimisation. The answer is still the exact optimum of the full problem, certified by
its duality gap.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification

from sklearn_safescreen import SafeSVC
from sklearn_safescreen.path import svm_path
from sklearn_safescreen.plotting import plot_screening_path

X, y = make_classification(n_samples=3000, n_features=20, n_informative=10,
                           flip_y=0.05, random_state=0)
Cs = np.logspace(-3, 1, 9)
model = SafeSVC(kernel="linear", screening="IT", warm_start=True, tol=1e-6)
print(f"{'C':>8} {'screened':>9} {'duality gap':>12}")
for C in Cs:
    model.set_params(C=C).fit(X, y)
    report = model.screening_report_
    print(f"{C:>8.3g} {report.screening_rate:>9.1%} {model.dual_gap_[0]:>12.2e}")

# %%
# The report records every screening event: the rule, the moment (from the reference
# before the solve, or from duality-gap balls during it), and the time spent.
print(model.screening_report_)

# %%
# The same path as one call, with and without screening: the screening rate and the
# time of each fit (the two paths reach the same optima).
screened = svm_path(X, y, Cs, kernel="linear", tol=1e-6)
plain = svm_path(X, y, Cs, kernel="linear", tol=1e-6, screening=None)
ax = plot_screening_path(screened, title="Linear SafeSVC path, 3000 x 20")
ax.time_ax.plot(plain.values, plain.times, "k:", label="fit time, no screening (s)")
ax.time_ax.legend(loc="lower right")
print(f"whole path: {screened.times.sum():.3f} s screened, {plain.times.sum():.3f} s not")
plt.show()
