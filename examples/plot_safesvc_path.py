"""
Walking a SafeSVC regularisation path
=====================================

Each solution is the reference that screens the next problem: samples proven to lie
strictly outside the margin (alpha = 0) or strictly inside it (alpha = C) leave the
optimisation. The answer is still the exact optimum of the full problem, certified by
its duality gap.
"""

import numpy as np
from sklearn.datasets import make_classification

from sklearn_safescreen import SafeSVC

X, y = make_classification(n_samples=3000, n_features=20, n_informative=10,
                           flip_y=0.05, random_state=0)
model = SafeSVC(kernel="linear", screening="IT", warm_start=True, tol=1e-6)
print(f"{'C':>8} {'screened':>9} {'duality gap':>12}")
for C in np.logspace(-3, 1, 9):
    model.set_params(C=C).fit(X, y)
    report = model.screening_report_
    print(f"{C:>8.3g} {report.screening_rate:>9.1%} {model.dual_gap_[0]:>12.2e}")

# %%
# The report records every screening event: the rule, the moment (from the reference
# before the solve, or from duality-gap balls during it), and the time spent.
print(model.screening_report_)
