"""Path steps from genuinely inexact references, checked variable by variable.

The estimators' path step hands the previous solution, with its full duality gap, to
the rules (``doc/theory/safety.rst``). These tests take the estimators through such
steps (SafeSVC linear and kernel, both directions of ``C``; SafeLAD; SafeMetricLearner)
with references that are far from exact (large ``tol``, or a perturbed solution with its
gap computed here), record every decision the rules take, and check

* that the reference handed to the rules carries its full gap, recomputed here from its
  dual point with own formulas (a rule fed a gap of 0 treats the reference as exact);
* every screened variable against an independent exact solve at the target value
  (``_svm_truth``, CLARABEL);
* that the rules did screen something, so that no test passes vacuously.

The repair machinery of the certificate would hide an unsafe decision in the final
model; these tests look at the decisions themselves.
"""

from __future__ import annotations

import numpy as np
import pytest
from _screened import screened_fit
from _svm_truth import augment, noisy_data, solve_svm_dual, svm_certificate, violations
from _triplet_models import cvx_solve, primal
from sklearn.metrics.pairwise import rbf_kernel
from test_lad_rules import full_gap, laplace_data, solve_lad_dual

from sklearn_safescreen import SafeLAD, SafeMetricLearner, SafeSVC
from sklearn_safescreen.engine import box_qp as engine_box_qp
from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.problems.box_qp import BoxQPReference
from sklearn_safescreen.screening import triplet_bounds as tb


@pytest.fixture
def svm_steps(monkeypatch):
    """Every (reference, C, result) the SVM path step screens with."""
    steps = []
    original = engine_box_qp.SVMPath.screen

    def spy(self, rule, ref, C):
        res = original(self, rule, ref, C)
        steps.append((ref, C, res))
        return res

    monkeypatch.setattr(engine_box_qp.SVMPath, "screen", spy)
    return steps


@pytest.fixture
def lad_steps(monkeypatch):
    steps = []
    original = engine_box_qp.LADPath.screen

    def spy(self, rule, ref, C):
        res = original(self, rule, ref, C)
        steps.append((ref, C, res))
        return res

    monkeypatch.setattr(engine_box_qp.LADPath, "screen", spy)
    return steps


def assert_svm_step_safe(ref, C, res, Q=None, Z=None, *, min_rel_gap, rule):
    n = ref.alpha.size
    q = Q @ ref.alpha if Q is not None else Z @ (Z.T @ ref.alpha)
    gap, rel_gap, _, _ = svm_certificate(ref.alpha, q, np.full(n, ref.C))
    # the reference's margins and full gap, as the rules must see them
    np.testing.assert_allclose(ref.margins, q, rtol=1e-9, atol=1e-9 * np.abs(q).max())
    assert ref.gap == pytest.approx(gap, rel=1e-6, abs=1e-12)
    assert rel_gap > min_rel_gap, "the reference is not inexact enough for this test"
    truth = solve_svm_dual(C, Q=Q, Z=Z)
    wrong_lo, wrong_hi = violations(res, truth)
    assert wrong_lo.size == 0 and wrong_hi.size == 0, (rule, C, ref.C, wrong_lo, wrong_hi)
    return res.n_screened


# ------------------------------------------------------------------------ SafeSVC ---
@pytest.mark.parametrize("ratio", [0.8, 1.25])
@pytest.mark.parametrize("rule", ["IT", "BT1", "BT2", "DVI"])
def test_svc_kernel_steps_from_loose_references(svm_steps, rule, ratio):
    """RBF SafeSVC at tol=0.01 leaves a relative gap of ~1e-3 in its reference; the
    next fit (either direction of C) screens from it."""
    X, y = noisy_data(0, 400, 5, flip=0.15)
    gamma = 0.2
    Q = y[:, None] * (rbf_kernel(X, X, gamma=gamma) + 1.0) * y[None, :]
    model = screened_fit(SafeSVC(kernel="rbf", gamma=gamma, C=1.0, tol=0.01,
                                 screening=rule, warm_start=True), X, y)
    svm_steps.clear()
    screened_fit(model.set_params(C=ratio), X, y)
    (ref, C, res), = svm_steps
    assert ref.C == 1.0 and C == ratio
    n_screened = assert_svm_step_safe(ref, C, res, Q=Q, min_rel_gap=1e-4, rule=rule)
    if rule != "BT2":  # BT2 needs no inflation, and screens little here
        assert n_screened > 0


def _perturbed_reference(C_ref, Z, shrink, noise, seed=0):
    """A solver stopped early looks like the optimum at a smaller C: the exact optimum at
    ``shrink * C_ref``, moved by relative ``noise``; gap computed here."""
    n = Z.shape[0]
    a = solve_svm_dual(shrink * C_ref, Z=Z).alpha
    a = np.clip(a * (1 + noise * np.random.RandomState(seed).randn(n)), 0.0, C_ref)
    q = Z @ (Z.T @ a)
    return BoxQPReference(C_ref, a, q, svm_certificate(a, q, np.full(n, C_ref))[0])


@pytest.mark.parametrize("ratio", [0.8, 1.25])
@pytest.mark.parametrize("rule", ["IT", "BT1", "DVI"])
def test_svc_linear_steps_from_perturbed_references(svm_steps, rule, ratio):
    """Linear SafeSVC solves to near machine precision even at a loose ``tol`` (its
    interior-point finish), so the inexact reference is planted: a perturbed solution
    with its own gap becomes the warm-start reference of the next fit."""
    X, y = noisy_data(1, 1000, 5, flip=0.1)
    Z = y[:, None] * augment(X, 1.0)
    model = screened_fit(SafeSVC(kernel="linear", C=1.0, tol=1e-6, screening=rule,
                                 warm_start=True), X, y)
    path, = model._path.paths
    path.reference = _perturbed_reference(1.0, Z, 0.999, 1e-3)
    svm_steps.clear()
    screened_fit(model.set_params(C=ratio), X, y)
    (ref, C, res), = svm_steps
    assert ref.C == 1.0
    assert assert_svm_step_safe(ref, C, res, Z=Z, min_rel_gap=1e-3, rule=rule) > 0


# ------------------------------------------------------------------------ SafeLAD ---
@pytest.mark.parametrize("ratio", [0.8, 1.25])
def test_lad_steps_from_perturbed_references(lad_steps, ratio):
    X, y = laplace_data(7, 300, 3)
    Xa = augment(X, 1.0)
    G = Xa @ Xa.T
    n, C_ref = y.size, 0.05
    model = screened_fit(SafeLAD(C=C_ref, tol=1e-6, warm_start=True), X, y)
    path, = model._path.paths
    h = np.full(n, C_ref)
    exact_ref = solve_lad_dual(G, y, 0.98 * h)
    rng = np.random.RandomState(0)
    a = np.clip(exact_ref.alpha * (1 + 0.01 * rng.randn(n)), -h, h)
    path.reference = BoxQPReference(C_ref, a, G @ a, full_gap(G, y, h, a))
    lad_steps.clear()
    C = ratio * C_ref
    screened_fit(model.set_params(C=C), X, y)
    (ref, C_got, res), = lad_steps
    assert C_got == pytest.approx(C)
    assert ref.gap == pytest.approx(full_gap(G, y, h, ref.alpha), rel=1e-6)
    assert ref.gap > 1e-4 * abs(float(y @ ref.alpha))
    truth = solve_lad_dual(G, y, np.full(n, C))
    assert not np.any(res.at_lower & ~(truth.pred > y)), "into R but not in R"
    assert not np.any(res.at_upper & ~(truth.pred < y)), "into L but not in L"
    assert res.n_screened > 0


def test_lad_kernel_steps_from_loose_references(lad_steps):
    """Kernel SafeLAD at a loose tol: the reference of the next fit carries the full
    gap of its dual point, and its decisions hold at the exact optimum."""
    X, y = laplace_data(8, 250, 3)
    gamma = 0.5
    G = rbf_kernel(X, X, gamma=gamma) + 1.0
    n = y.size
    model = screened_fit(SafeLAD(kernel="rbf", gamma=gamma, C=0.5, tol=1e-2,
                                 warm_start=True), X, y)
    lad_steps.clear()
    screened_fit(model.set_params(C=0.4), X, y)
    (ref, C, res), = lad_steps
    h = np.full(n, ref.C)
    gap = full_gap(G, y, h, ref.alpha)
    assert gap > 1e-6 * abs(float(y @ ref.alpha))
    assert ref.gap == pytest.approx(gap, rel=1e-6)
    truth = solve_lad_dual(G, y, np.full(n, C))
    assert not np.any(res.at_lower & ~(truth.pred > y))
    assert not np.any(res.at_upper & ~(truth.pred < y))
    assert res.n_screened > 0


# -------------------------------------------------------------- SafeMetricLearner ---
@pytest.fixture
def triplet_calls(monkeypatch):
    """The RRPB balls, ranges and sphere passes of the triplet path step."""
    calls = {"rrpb": [], "ranges": [], "sphere": [], "range_screen": []}

    def wrap(name, key, record):
        original = getattr(tb, name)

        def spy(*args):
            out = original(*args)
            calls[key].append(record(args, out))
            return out

        monkeypatch.setattr(tb, name, spy)

    wrap("rrpb", "rrpb", lambda a, out: dict(M0=a[0].copy(), lam0=a[1], lam=a[2], eps=a[3]))
    wrap("rrpb_ranges", "ranges", lambda a, out: dict(m=a[2], eps=a[3], lam0=a[4]))
    wrap("merge_rrpb_ranges", "ranges", lambda a, out: dict(m=a[2], eps=a[3], lam0=a[4]))
    wrap("scaled_sphere_screen", "sphere", lambda a, out: dict(status=out[0]))
    wrap("range_screen", "range_screen", lambda a, out: dict(status=out[0], lam=a[3]))
    return calls


def _metric_data(seed=0, n=30, d=3):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    X = rng.randn(n, d) + 0.9 * y[:, None] * rng.randn(1, d)
    return X, y


@pytest.mark.parametrize("ratio", [0.7, 1.3])
@pytest.mark.parametrize("gamma", [0.0, 0.05])
def test_metric_learner_steps_from_loose_references(triplet_calls, ratio, gamma):
    """A loose first fit (tol=0.05) is the reference of the next one. The RRPB radius
    uses eps >= sqrt(2 (P(M0) - P*) / lambda0) with the optimal value P* of an
    independent CLARABEL solve, and every triplet the step screens (sphere rule, range
    screening) is where the exact optimum at the target puts it."""
    X, y = _metric_data()
    loss = "hinge" if gamma == 0.0 else "smoothed_hinge"
    # (range screening on: the ranges of a loose reference are under test too)
    kw = dict(k=2, loss=loss, tol=0.05, warm_start=True, max_iter=100000,
              range_screening=True)
    if gamma:
        kw["smoothing"] = gamma
    model = screened_fit(SafeMetricLearner(alpha=1.0, **kw), X, y)
    lam0 = model.critical_alpha_ * 0.05
    screened_fit(model.set_params(alpha=lam0), X, y)
    ts = model._path.paths[0].ts
    for key in triplet_calls:
        triplet_calls[key].clear()
    lam = ratio * lam0
    screened_fit(model.set_params(alpha=lam), X, y)
    ball, = triplet_calls["rrpb"]
    assert ball["lam0"] == pytest.approx(lam0) and ball["lam"] == pytest.approx(lam)
    M0 = ball["M0"]
    _, p_star0 = cvx_solve(X, ts, lam0, gamma, False)
    excess = primal(ts, M0, lam0, gamma, False) - p_star0
    assert excess > 1e-6 * abs(p_star0), "the reference is not inexact enough"
    need = np.sqrt(2 * excess / lam0)
    assert ball["eps"] >= need * (1 - 1e-6)
    assert triplet_calls["ranges"]
    for rec in triplet_calls["ranges"]:
        assert rec["eps"] > 0
    # decisions at the target against the exact optimum
    M_star, _ = cvx_solve(X, ts, lam, gamma, False)
    z_star = tp.triplet_values(ts, M_star, False)
    tol = 1e-5 * (1 + np.abs(z_star).max())
    status = np.zeros(ts.n_triplets, dtype=np.int8)
    for rec in triplet_calls["range_screen"] + triplet_calls["sphere"]:
        status = np.maximum(status, rec["status"])
    assert np.count_nonzero(status) > 0
    assert np.all(z_star[status == 2] >= 1 - tol), "into R (zero loss) but not in R"
    assert np.all(z_star[status == 1] <= 1 - gamma + tol), "into L (linear) but not in L"
