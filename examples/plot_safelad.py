"""
Robust regression path with SafeLAD
===================================

Least absolute deviations (LAD) regression is robust to outliers in the target. SafeLAD
solves the L2-regularised LAD problem exactly, and along a regularisation path each
solution is the reference of the DVI rule that proves, for most samples, on which side
of the fit they lie at the next value of ``C`` (the sign of the residual): those samples
leave the optimisation. Every answer is certified by the duality gap of the full
problem.

The plot shows, along 60 values of ``C``, the share of samples removed by the rule
before each solve, and the coefficients approaching the unregularised LAD fit
(``QuantileRegressor(quantile=0.5, alpha=0)``), next to the least-squares fit pulled away
by the outliers.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LinearRegression, QuantileRegressor

from sklearn_safescreen.lad import SafeLAD

rng = np.random.RandomState(0)
n, d = 3000, 5
X = rng.randn(n, d)
beta = np.array([1.5, -2.0, 0.0, 0.5, 1.0])
y = X @ beta + rng.laplace(scale=0.5, size=n)
outliers = rng.rand(n) < 0.05
y[outliers] += 30.0 * (X[outliers, 0] > 0)  # gross errors on one side

Cs = np.logspace(-3, 1, 60)
model = SafeLAD(warm_start=True, tol=1e-8)
rates, coefs = [], []
print(f"{'C':>8} {'DVI screened':>13} {'duality gap':>12}")
for C in Cs:
    model.set_params(C=C).fit(X, y)
    events = model.screening_report_.events
    ref = [e for e in events if e.moment == "reference" and e.value == C]
    rates.append(ref[-1].n_screened / n if ref else 0.0)
    coefs.append(model.coef_.copy())
    print(f"{C:>8.3g} {rates[-1]:>13.1%} {model.dual_gap_:>12.2e}")
coefs = np.array(coefs)

lad = QuantileRegressor(quantile=0.5, alpha=0.0, solver="highs").fit(X, y)
ols = LinearRegression().fit(X, y)
print("SafeLAD at C=10:   ", np.round(coefs[-1], 3))
print("QuantileRegressor: ", np.round(lad.coef_, 3))
print("least squares:     ", np.round(ols.coef_, 3))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.semilogx(Cs, rates)
ax1.set_xlabel("C")
ax1.set_ylabel("samples screened by DVI before the solve")
ax1.set_ylim(0, 1)
for j in range(d):
    (line,) = ax2.semilogx(Cs, coefs[:, j], label=f"coef {j}")
    ax2.axhline(lad.coef_[j], color=line.get_color(), ls=":", lw=1)
    ax2.plot(Cs[-1] * 1.6, ols.coef_[j], "x", color=line.get_color())
ax2.set_xlabel("C (dotted: unregularised LAD; x: least squares)")
ax2.set_ylabel("coefficient")
ax2.legend(fontsize=8)
fig.tight_layout()
plt.show()
