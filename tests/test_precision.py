"""SafeSVC and SafeLAD at any accepted ``C``: screening from sloppy references stays
safe up to the largest ``C`` float64 resolves (``C * sum(c) * max K(x, x) <= 1/eps``, the
rounding-error bounds of ``doc/theory/safety.rst``), a fit beyond double precision says so
(``PrecisionWarning``, ``doc/theory/svm_lad.rst``), and a larger ``C`` is refused with
the figure.

ScreeningRepairWarning is an error in this suite (pyproject.toml): a rule that fixed a
variable the certificate then proves wrong fails the test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _profiles import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from sklearn_safescreen import PrecisionWarning, SafeLAD, SafeSVC, ScreeningRepairWarning
from sklearn_safescreen._validation import EPS
from sklearn_safescreen.problems.box_qp_data import critical_C


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _quiet():
    """Silence what large C legitimately warns about (not ScreeningRepairWarning)."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore", PrecisionWarning)
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("error", ScreeningRepairWarning)
    return ctx


def c_limit(X, kernel="linear", intercept_scaling=1.0):
    """The largest C the estimators accept on X with unit weights:
    1 / (eps * n * max K(x, x)), K with the intercept's intercept_scaling**2."""
    diag = np.einsum("ij,ij->i", X, X) if kernel == "linear" else np.ones(len(X))
    return 1.0 / (EPS * len(X) * (diag.max() + intercept_scaling**2))


@pytest.mark.parametrize("c_ref, C_fraction, tol", [(1e11, 0.9, 0.1), (1e9, 0.99, 1e-3)])
def test_rbf_svc_huge_C_from_sloppy_reference_needs_no_repair(cancer, c_ref, C_fraction,
                                                                tol):
    """The defect: RBF SafeSVC on standardised breast cancer, a loose reference far below
    C = 1e14 / 1e15; the intersection test fixed samples from margins and a BT2 radius
    whose round-off C amplifies (the radius came out too small), and the certificate
    repaired them with a ScreeningRepairWarning. Those C are now refused (above the
    largest C float64 resolves here, 4e12); the same holds just below that limit."""
    X, y = cancer
    C = C_fraction * c_limit(X, "rbf")
    ctx = _quiet()
    try:
        model = SafeSVC(kernel="rbf", C=c_ref, tol=tol, warm_start=True,
                        max_iter=2000).fit(X, y)
        model.set_params(C=C, tol=1e-3).fit(X, y)
    finally:
        ctx.__exit__(None, None, None)
    assert not any(e.moment == "repair" for e in model.screening_report_.events)


def _sloppy(model, X, y, C_ref, noise, seed):
    """Replace the warm-start reference by a perturbed one (its gap recomputed), as a
    solver stopped far from convergence would leave."""
    path, = model._path.paths
    ref = path.reference
    problem = path.data.problem(C_ref)
    rng = np.random.RandomState(seed)
    alpha = np.clip(ref.alpha * (1 + noise * rng.randn(ref.alpha.size))
                    + noise * C_ref * rng.rand(ref.alpha.size) * (problem.hi > 0),
                    problem.lo, problem.hi)
    path.reference = problem.reference(C_ref, alpha)
    return path.reference


def _agree(screened, plain, X, scale):
    """Two certified fits of one strictly convex problem: their primal points lie within
    sqrt(2 gap) of the optimum each, so decision values differ by at most the sum times
    the norm of the augmented sample (plus a rounding slack)."""
    radius = np.sqrt(2 * max(np.max(screened.dual_gap_), 0)) \
        + np.sqrt(2 * max(np.max(plain.dual_gap_), 0))
    if not np.isfinite(radius) or radius > 1e6:
        return
    d1, d2 = np.ravel(screened._scores(X)), np.ravel(plain._scores(X))
    bound = radius * scale + 1e-6 * (1 + np.abs(d2))
    assert np.all(np.abs(d1 - d2) <= bound)


@settings(max_examples=examples(24))
@given(seed=st.integers(0, 10_000), kernel=st.sampled_from(["linear", "rbf"]),
       log_ratio=st.floats(0.0, 1.0), noise=st.sampled_from([1e-3, 1e-1, 0.5]),
       up=st.booleans(), rule=st.sampled_from(["IT", "BT1", "BT2", "DVI"]))
def test_svc_any_C_from_sloppy_reference(seed, kernel, log_ratio, noise, up, rule):
    """Random problems, C log-uniform from C_min to 1e15, the reference a perturbed
    solution at a neighbouring C: no repair, and the result equals the unscreened solve
    within the gaps."""
    X, y = make_classification(n_samples=80, n_features=4, n_informative=3,
                               n_redundant=0, flip_y=0.05, random_state=seed)
    X = StandardScaler().fit_transform(X)
    Za = np.hstack([X, np.ones((len(y), 1))]) * np.where(y == 1, 1.0, -1.0)[:, None]
    c_min = critical_C(Za @ Za.sum(axis=0)) if kernel == "linear" else 1e-3
    top = min(1e15, c_limit(X, kernel) / 3)  # (the reference may be 3 C)
    C = float(np.exp(np.log(c_min) + log_ratio * (np.log(top) - np.log(c_min))))
    C_ref = C / 3 if up else C * 3
    kw = dict(kernel=kernel, gamma=0.5) if kernel == "rbf" else dict(kernel=kernel)
    ctx = _quiet()
    try:
        model = SafeSVC(C=C_ref, tol=1e-2, warm_start=True, screening=rule, max_iter=500,
                        **kw).fit(X, y)
        _sloppy(model, X, y, C_ref, noise, seed)
        model.set_params(C=C, tol=1e-6).fit(X, y)
        plain = SafeSVC(C=C, tol=1e-6, screening=None, max_iter=500, **kw).fit(X, y)
    finally:
        ctx.__exit__(None, None, None)
    assert not any(e.moment == "repair" for e in model.screening_report_.events)
    scale = np.sqrt(1.0 + (np.einsum("ij,ij->i", X, X) if kernel == "linear" else 1.0))
    _agree(model, plain, X, scale)


def _lad_data(seed, n=80, d=3):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = X @ rng.randn(d) + 0.5 + rng.laplace(size=n)
    return X, y


@settings(max_examples=examples(16))
@given(seed=st.integers(0, 10_000), kernel=st.sampled_from(["linear", "rbf"]),
       log_C=st.floats(-3.0, 15.0), noise=st.sampled_from([1e-3, 1e-1, 0.5]),
       up=st.booleans())
def test_lad_any_C_from_sloppy_reference(seed, kernel, log_C, noise, up):
    """SafeLAD likewise, C log-uniform in [1e-3, 1e15], capped at the largest accepted
    C (a third of it: the reference may be 3 C)."""
    X, y = _lad_data(seed)
    C = min(10.0**log_C, c_limit(X) / 3)
    C_ref = C / 3 if up else C * 3
    kw = dict(kernel=kernel, gamma=0.5) if kernel == "rbf" else dict(kernel=kernel)
    ctx = _quiet()
    try:
        model = SafeLAD(C=C_ref, tol=1e-2, warm_start=True, max_iter=500, **kw).fit(X, y)
        _sloppy(model, X, y, C_ref, noise, seed)
        # large C takes ~1,000 epochs on these 80 samples: let both fits converge
        model.set_params(C=C, tol=1e-6, max_iter=5000).fit(X, y)
        plain = SafeLAD(C=C, tol=1e-6, screening=None, max_iter=5000, **kw).fit(X, y)
    finally:
        ctx.__exit__(None, None, None)
    assert not any(e.moment == "repair" for e in model.screening_report_.events)
    scale = np.sqrt(1.0 + (np.einsum("ij,ij->i", X, X) if kernel == "linear" else 1.0))
    _agree(model, plain, X, scale)


# -------------------------------------------------------- beyond double precision ---
def test_precision_warning_lad_huge_C():
    """SafeLAD just below the largest C float64 resolves: the free dual variables,
    stored to one rounding of C, leave a gap float64 cannot resolve to tol=1e-8; the
    fit says so instead of returning silently."""
    X, y = _lad_data(0, n=200)
    with pytest.warns(PrecisionWarning, match="beyond double precision|float64 arithmetic"):
        SafeLAD(C=0.9 * c_limit(X), tol=1e-8).fit(X, y)


def test_svc_at_the_old_limit_is_certified_by_the_hard_margin_gap(cancer):
    """SafeSVC at 0.9 times the C the worst-case figure allowed used to stop with a
    PrecisionWarning: the per-sample gap multiplies the margins' rounding by C. The
    data are separable, the path reaches the hard-margin solution and its C-free gap
    certifies it to tol=1e-8 (tests/test_hard_margin.py)."""
    X, y = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = SafeSVC(kernel="linear", C=0.9 * c_limit(X), tol=1e-8).fit(X, y)
    assert np.all(m.dual_gap_ >= 0)


def _lad_regression(scale):
    from sklearn.datasets import make_regression

    X, y = make_regression(100, 5, noise=1, random_state=0)
    return X * scale, y


# (gamma="scale" makes the RBF kernel scale-free: a scaled X is refused for "linear")
@pytest.mark.parametrize("Estimator, kernel, scale, C", [
    *[(SafeLAD, "linear", scale, 1.0) for scale in (1e9, 1e12, 1e50)],
    *[(SafeLAD, k, 1.0, C) for k in ("linear", "rbf") for C in (1e15, 1e300)]])
def test_unresolvable_scale_or_C_is_refused_with_the_figure(Estimator, kernel, scale, C):
    """SafeLAD on X * 1e9 used to return R^2 = -1e35 (an objective 4e17 times that of
    coef_ = 0) with only a PrecisionWarning, likewise at scales 1e12-1e50 and C = 1e15.
    LAD keeps samples at the bound at every C: the box's figure is its solution's."""
    X, y = _lad_regression(scale)
    limit = c_limit(X, kernel)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before any solve: nothing leaks
        with pytest.raises(ValueError, match=r"C \* sum\(sample weights\) \* max_i "
                           r"K\(x_i, x_i\) = 10\^[0-9.]+ exceeds 1/eps = 4.5e\+15.*Use C <= "
                           + f"{limit:.3g}".replace("+", r"\+")):
            Estimator(C=C, kernel=kernel).fit(X, y)


@pytest.mark.parametrize("kernel, scale, C", [
    ("linear", 1e50, 1.0), ("linear", 1.0, 1e300), ("rbf", 1.0, 1e300)])
def test_svc_overflowing_C_is_refused_before_any_solve(kernel, scale, C):
    """SafeSVC at C = 1e300 ran for seconds and leaked numpy overflow warnings: a box
    whose figure exceeds 1/eps^2 is refused before any solve (below it, the solution's
    own dual variables decide, tests/test_hard_margin.py)."""
    X, y = _lad_regression(scale)
    y = y > np.median(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"exceeds 1/eps\^2 = 2.03e\+31.*C=np.inf"):
            SafeSVC(C=C, kernel=kernel).fit(X, y)


@pytest.mark.parametrize("scale", [1e9, 1e12])
def test_svc_unresolvable_scale_is_refused_with_the_figure(scale):
    """SafeSVC on X * 1e9 (the regularised bias keeps its unit, so the solution's dual
    variables do not shrink with the scale): the path's step where float64 fails is
    refused with its figure instead of returning a model no better than chance."""
    X, y = _lad_regression(scale)
    y = y > np.median(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"float64 cannot resolve this fit.*"
                           r"could not be certified.*= 10\^1[6-9]\.[0-9]"):
            SafeSVC(C=1.0, kernel="linear").fit(X, y)


@pytest.mark.parametrize("Estimator", [SafeLAD, SafeSVC])
def test_largest_accepted_C_is_no_worse_than_coef_zero(Estimator):
    """Just below the limit the fit is accepted and its objective is below that of
    coef_ = 0 (above it, it was up to 1e15 times worse)."""
    X, y = _lad_regression(1.0)
    C = 0.9 * c_limit(X)
    ctx = _quiet()
    try:
        if Estimator is SafeLAD:
            m = Estimator(C=C, kernel="linear").fit(X, y)
            loss, zero = np.abs(y - X @ m.coef_ - m.intercept_), np.abs(y)
        else:
            y = np.where(y > np.median(y), 1.0, -1.0)
            m = Estimator(C=C, kernel="linear").fit(X, y)
            loss = np.maximum(0.0, 1.0 - y * m.decision_function(X))
            zero = np.ones_like(y)
    finally:
        ctx.__exit__(None, None, None)
    w = np.append(np.ravel(m.coef_), np.ravel(m.intercept_))
    assert 0.5 * w @ w + C * loss.sum() < C * zero.sum()


@pytest.mark.parametrize("estimator", [SafeSVC(kernel="linear", C=10.0),
                                       SafeSVC(kernel="rbf", C=100.0),
                                       SafeLAD(C=100.0)])
def test_no_precision_warning_at_ordinary_C(cancer, estimator):
    X, y = cancer
    if isinstance(estimator, SafeLAD):
        X, y = _lad_data(1, n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        estimator.fit(X, y)
