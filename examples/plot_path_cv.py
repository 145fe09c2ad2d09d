"""
Model selection along a safely screened path
============================================

This example selects C for a linear SafeSVC by 5-fold cross-validation over 20 values,
with RegularizationPathCV and with GridSearchCV on the same grid and folds, prints both
times and checks that the scores agree, then draws the screening rate, the fit time and
the CV score along the path.

:class:`~sklearn_safescreen.RegularizationPathCV` is a drop-in replacement for
``GridSearchCV`` over the regularisation parameter of a Safe estimator. Per fold it walks
the grid from the most to the least regularised value with warm starts: each solution
proves that some samples cannot change the next optimum (safe screening) and removes
them. Every fit is still the exact optimum, so ``cv_results_`` and ``best_params_`` are
GridSearchCV's; only the time shrinks.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.path import make_grid
from sklearn_safescreen.plotting import plot_screening_path
from sklearn_safescreen.svm import SafeSVC

X, y = make_classification(n_samples=5000, n_features=20, n_informative=10, flip_y=0.05,
                           random_state=0)
svc = SafeSVC(kernel="linear", tol=1e-6, random_state=0)
folds = StratifiedKFold(5)

# %%
# The grid: 20 values from C_min (below which every sample sits inside the margin and the
# solution is known in closed form) up to C = 10.
Cs = make_grid(svc, X, y, n_values=20, stop=10.0)
print(f"C from {Cs[0]:.3g} to {Cs[-1]:.3g}")

t0 = time.perf_counter()
search = RegularizationPathCV(svc, values=Cs, cv=folds, verbose=1).fit(X, y)
t_path = time.perf_counter() - t0

t0 = time.perf_counter()
grid = GridSearchCV(svc, {"C": list(Cs)}, cv=folds).fit(X, y)
t_grid = time.perf_counter() - t0

print(f"RegularizationPathCV {t_path:.2f} s, GridSearchCV {t_grid:.2f} s "
      f"({t_grid / t_path:.1f}x)")
print("same scores:", np.allclose(search.cv_results_["mean_test_score"],
                                  grid.cv_results_["mean_test_score"], atol=1e-6),
      "| best C:", search.best_params_["C"], grid.best_params_["C"])

# %%
# The screening rate along the path (each fold faint, the mean bold), the fit time and
# the CV score; the dotted line marks the selected C.
plot_screening_path(search)
plt.show()

# %%
# The screening report of the last fit of the first fold: which rule screened what.
print(search.path_reports_[0][-1])
