"""Safety and strength of the doubly sparse rules (``screening/doubly_sparse.py``,
Shibagaki et al. 2016), variable by variable against the exact optimum.

The exact optimum comes from ``_doubly_sparse_models.reference`` (an unscreened solve
polished on its active set: exact zeros, exact box values), cross-checked once against
cvxpy/CLARABEL. The rules are then run at **inexact** pairs: the optimum moved by noise
of several sizes, and every screening event of dynamic runs (recorded by a spy on the
path step's call of the rule function, local indices mapped through the reduced
problem's ``rows`` / ``cols``). Every decision must hold at the optimum:

* a screened feature has ``w*_j == 0`` and ``|X_j' alpha*| <= lam n``;
* a sample fixed at 0 has ``alpha*_i == 0``, one fixed at the box its box value;
* a kept feature has ``w*_j != 0``, a kept sample ``0 < |alpha*_i| < c_i``;

and the gap each event is handed must give balls that contain the optimum. The rules
are also compared with an own implementation of the feature rule (9), the sample rule
(15) and Theorems 2-3 alternated to their fixpoint, run with radii 1e-6 smaller (the
package may not screen more) and 1e-3 larger (it must screen at least that), so that a
shrunk radius, a wrong same-pair subtraction or a wrong box value fails; at valid gaps
the subtractions hardly ever change a decision, so the formulas are also compared at
gaps smaller than the pair's own (balls that need not hold the optimum), where they
do, including recorded pairs where they are known to. Properties:
simultaneous contains each individual rule at the same pair, the fixpoint does not
depend on the side it starts from, strict gains exist, and the printed Theorem 10
(inverted inequalities) would keep features that are zero.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import numpy as np
import pytest
from _doubly_sparse_models import (
    HINGE,
    SVR,
    alpha_of,
    cvx_solve,
    dense,
    dual,
    make_data,
    primal,
    reference,
    solve_path,
    zvalues,
)
from _profiles import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_safescreen.engine import doubly_sparse_reduced as engine_ds
from sklearn_safescreen.problems.doubly_sparse import ReducedProblem
from sklearn_safescreen.screening.doubly_sparse import (
    contradicted_features,
    contradicted_samples,
    keep_features,
    radii,
    screen_doubly_sparse,
)

LOSSES = [HINGE, SVR]
MODES = ["simultaneous", "features", "samples"]


# ------------------------------------------------------------------ helpers ---
def full_reduced(data) -> ReducedProblem:
    n, d = data.n_samples, data.n_features
    return ReducedProblem.build(data, np.arange(n), np.arange(d), np.zeros(n, bool),
                                np.zeros(n))


def pair_at(red, u, lam, beta):
    t = red.margins(u)
    return t, red.gap(u, t, lam, beta)


def own_gap(data, u, lam, beta):
    """The full gap of ``(u, alpha(u))`` from the own objectives."""
    a = alpha_of(dense(data.X) @ u, data.y, data.weights, data.loss, data.gamma,
                 data.epsilon)
    args = (data.X, data.y, data.weights)
    return (primal(*args, u, lam, beta, data.loss, data.gamma, data.epsilon)
            - dual(*args, a, lam, beta, data.loss, data.gamma, data.epsilon))


def assert_decisions_hold(ref, rows, cols, ev, where=""):
    """Every decision of ``ev`` (local to ``rows`` x ``cols``) at the exact optimum."""
    lam_n = ref.lam * len(ref.y)
    feats = cols[ev.features]
    assert np.all(ref.w[feats] == 0), (where, feats[ref.w[feats] != 0])
    assert np.all(np.abs(ref.s[feats]) <= lam_n * (1 + 1e-9)), where
    zero = rows[ev.at_zero]
    assert np.all(np.abs(ref.alpha[zero]) <= 1e-8), (where, zero[ref.alpha[zero] != 0])
    box = rows[ev.at_box]
    np.testing.assert_allclose(ref.alpha[box], ev.box_value[ev.at_box], rtol=0, atol=1e-8,
                               err_msg=f"{where}: samples fixed at the wrong value")
    assert np.all(np.abs(ev.box_value[ev.at_box]) == ref.c[box]), where
    kept_f = cols[ev.kept_features]
    assert np.all(ref.w[kept_f] != 0), (where, kept_f[ref.w[kept_f] == 0])
    kept_s = rows[ev.kept_samples]
    assert np.all(ref.inside[kept_s]), (where, kept_s[~ref.inside[kept_s]])
    assert not (ev.features & ev.kept_features).any()
    assert not ((ev.at_zero | ev.at_box) & ev.kept_samples).any()
    assert not (ev.at_zero & ev.at_box).any()


def assert_balls_hold(ref, red, u, t, gap, lam, beta):
    """The optimum restricted to the reduced problem lies in both balls of ``gap`` (the
    dual one centred at the gap's dual point: ``alpha(u)`` unless the gap carries
    another)."""
    data = red.data
    r_D, r_P = radii(gap, lam, beta, data.gamma, data.n_samples)
    assert np.linalg.norm(u - ref.w[red.cols]) <= r_P + 1e-12
    a = getattr(gap, "alpha", None)
    if a is None:
        a = alpha_of(t, red.y, red.weights, data.loss, data.gamma, data.epsilon)
    dist = np.sqrt(((a - ref.alpha[red.rows]) ** 2 / red.weights).sum())
    assert dist <= r_D + 1e-12


def oracle(data, u, G, lam, beta, mode, scale, skip_f=None, skip_s=None,
           start="features"):
    """Own rules on the full problem from the gap ``G`` with radii times ``scale``:
    (9) and (15), alternated from ``start`` with Theorems 2-3 recomputed from scratch
    each round; the features ``skip_f`` and samples ``skip_s`` are never decided."""
    X = dense(data.X)
    n, d = X.shape
    y, c, gamma, eps = data.y, data.weights, data.gamma, data.epsilon
    r_D = np.sqrt(2 * n * G / gamma) * scale
    r_P = np.sqrt(2 * G / (lam * beta)) * scale
    a = alpha_of(X @ u, y, c, data.loss, gamma, eps)
    F = np.zeros(d, bool)
    Z, B, bv = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n)
    open_f = np.ones(d, bool) if skip_f is None else ~skip_f
    open_s = np.ones(n, bool) if skip_s is None else ~skip_s

    def features_step():
        S = Z | B
        abar = np.where(B, bv, 0.0)
        s = X.T @ np.where(S, abar, a)  # the centre at the decided values
        col = np.sqrt((c[~S, None] * X[~S] ** 2).sum(0))
        rho = np.sqrt(max(r_D**2 - ((a - abar)[S] ** 2 / c[S]).sum(), 0.0))
        new = (np.abs(s) + col * rho <= lam * n) & ~F & open_f
        F[new] = True
        return new.any()

    def samples_step():
        t = X[:, ~F] @ u[~F]
        row = np.sqrt((X[:, ~F] ** 2).sum(1))
        rho = np.sqrt(max(r_P**2 - u[F] @ u[F], 0.0))
        lo, hi = t - row * rho, t + row * rho
        if data.hinge:
            m_lo, m_hi = np.where(y > 0, lo, -hi), np.where(y > 0, hi, -lo)
            zero, box, val = m_lo >= 1, m_hi <= 1 - gamma, c * y
        else:
            above, below = lo >= y + eps + gamma, hi <= y - eps - gamma
            zero = (lo >= y - eps) & (hi <= y + eps)
            box, val = above | below, np.where(above, -c, c)
        new = (zero | box) & ~(Z | B) & open_s
        Z[new & zero] = True
        to_box = new & box & ~zero
        B[to_box] = True
        bv[to_box] = val[to_box]
        return new.any()

    steps = [k for k in (("features", "samples") if start == "features"
                         else ("samples", "features")) if mode in ("simultaneous", k)]
    while True:
        changed = False
        for step in steps:
            changed |= features_step() if step == "features" else samples_step()
        if not changed or mode != "simultaneous":
            return F, Z, B, bv


def assert_sandwiched(data, u, ev, G, lam, beta, mode):
    """oracle(radii * (1 + 1e-3)) <= package <= oracle(radii * (1 - 1e-6))."""
    F_in, Z_in, B_in, _ = oracle(data, u, G, lam, beta, mode, 1 + 1e-3)
    F_out, Z_out, B_out, bv_out = oracle(data, u, G, lam, beta, mode, 1 - 1e-6)
    for name, got, inner, outer in (("features", ev.features, F_in, F_out),
                                    ("at_zero", ev.at_zero, Z_in, Z_out),
                                    ("at_box", ev.at_box, B_in, B_out)):
        extra = np.flatnonzero(got & ~outer)
        assert not extra.size, f"{mode}: {name} {extra} beyond the exact rule's"
        missed = np.flatnonzero(inner & ~got)
        assert not missed.size, f"{mode}: {name} {missed} missed"
    np.testing.assert_array_equal(ev.box_value[ev.at_box], bv_out[ev.at_box])


@contextlib.contextmanager
def spying():
    """Record every call of the rule function by the path step."""
    calls = []
    original = engine_ds.screen_doubly_sparse

    def spy(red, u, t, gap, lam, beta, mode="simultaneous", *args, **kwargs):
        ev = original(red, u, t, gap, lam, beta, mode, *args, **kwargs)
        calls.append(Call(red, u.copy(), t.copy(), gap, lam, beta, mode, ev))
        return ev

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine_ds, "screen_doubly_sparse", spy)
        yield calls


@dataclass
class Call:
    red: ReducedProblem
    u: np.ndarray
    t: np.ndarray
    gap: object
    lam: float
    beta: float
    mode: str
    ev: object


problems = st.fixed_dictionaries({
    "seed": st.integers(0, 2**16),
    "loss": st.sampled_from(LOSSES),
    "sparse": st.booleans(),
    "weights": st.booleans(),
    "n": st.integers(20, 80),
    "d": st.integers(20, 80),
    "frac": st.sampled_from([0.5, 0.2, 0.05]),
    "gamma": st.sampled_from([0.25, 0.5, 1.5]),
    "epsilon": st.sampled_from([0.0, 0.1, 0.5]),
    "beta": st.sampled_from([0.3, 1.0, 3.0]),
})


def setup(p):
    data = make_data(p["seed"], p["n"], p["d"], p["loss"], weights=p["weights"],
                     sparse=p["sparse"], gamma=p["gamma"], epsilon=p["epsilon"])
    lam = p["frac"] * data.lambda_max()
    return data, lam, p["beta"], reference(data, lam, p["beta"])


def perturbed(ref, rng, noise):
    """The optimum moved by relative ``noise`` on a random half of the coordinates
    (zero ones included)."""
    d = ref.w.size
    scale = max(np.abs(ref.w).max(), 1e-3)
    return ref.w + noise * scale * rng.randn(d) * (rng.rand(d) < 0.5)


# --------------------------------------------------------------- reference ---
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
def test_reference_matches_cvxpy(loss, sparse):
    data = make_data(4, 60, 40, loss, sparse=sparse)
    lam, beta = 0.1 * data.lambda_max(), 0.5
    ref = reference(data, lam, beta)
    assert ref.gap <= 1e-13 and ref.slack > 1e-6
    w, val = cvx_solve(data.X, data.y, data.weights, lam, beta, loss, data.gamma,
                       data.epsilon)
    np.testing.assert_allclose(w, ref.w, atol=1e-6)
    assert val == pytest.approx(primal(data.X, data.y, data.weights, ref.w, lam, beta, loss,
                                       data.gamma, data.epsilon), rel=1e-9)
    # the unscreened solve itself, before polishing, is within its own gap radius
    out, _ = solve_path(data, lam, beta, rule=None, tol=1e-13)
    assert np.linalg.norm(out.w - ref.w) <= np.sqrt(2 * max(out.gap, 1e-16) / (lam * beta))


# -------------------------------------------------------------------- radii ---
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("beta", [0.3, 2.0])
def test_radii_are_the_documented_ones(loss, beta):
    """r_D = sqrt(2 n G / gamma) (the dual is gamma/n-strongly concave in the 1/c
    metric), r_P = sqrt(2 G / (lam beta)), G the safe gap; both balls hold the
    optimum, and the safe gap is at least the own gap."""
    data = make_data(6, 50, 30, loss, gamma=0.4)
    n = data.n_samples
    lam = 0.2 * data.lambda_max()
    ref = reference(data, lam, beta)
    red = full_reduced(data)
    rng = np.random.RandomState(0)
    for noise in (1e-8, 1e-5, 1e-3, 1e-1):
        u = perturbed(ref, rng, noise)
        t, gap = pair_at(red, u, lam, beta)
        assert gap.safe >= own_gap(data, u, lam, beta) - 1e-15
        assert gap.gap == pytest.approx(own_gap(data, u, lam, beta), rel=1e-9, abs=1e-15)
        r_D, r_P = radii(gap, lam, beta, data.gamma, n)
        assert r_D == pytest.approx(np.sqrt(2 * n * gap.safe / data.gamma), rel=1e-14)
        assert r_P == pytest.approx(np.sqrt(2 * gap.safe / (lam * beta)), rel=1e-14)
        assert_balls_hold(ref, red, u, t, gap, lam, beta)


# ---------------------------------------------------- safety at inexact pairs ---
@settings(max_examples=examples(320))
@given(p=problems)
def test_rules_are_safe_at_perturbed_optima(p):
    data, lam, beta, ref = setup(p)
    red = full_reduced(data)
    rows, cols = red.rows, red.cols
    rng = np.random.RandomState(p["seed"])
    decided = 0
    for noise in (1e-7, 1e-5, 1e-4, 1e-3, 1e-2):
        u = perturbed(ref, rng, noise)
        t, gap = pair_at(red, u, lam, beta)
        G = own_gap(data, u, lam, beta)
        assert gap.safe >= G
        events = {}
        for mode in MODES:
            ev = screen_doubly_sparse(red, u, t, gap, lam, beta, mode)
            assert_decisions_hold(ref, rows, cols, ev, f"{mode} at noise {noise}")
            if G > 1e-10:  # radii well above the rounding slack
                assert_sandwiched(data, u, ev, G, lam, beta, mode)
            events[mode] = ev
            decided += ev.n_features + ev.n_samples
        # simultaneous contains each individual rule at the same pair
        sim, feat, samp = events["simultaneous"], events["features"], events["samples"]
        assert not (feat.features & ~sim.features).any()
        assert not (samp.at_zero & ~sim.at_zero).any()
        assert not (samp.at_box & ~sim.at_box).any()
        # the fixpoint does not depend on the side the alternation starts from
        other = screen_doubly_sparse(red, u, t, gap, lam, beta, start="samples")
        for name in ("features", "at_zero", "at_box", "box_value"):
            np.testing.assert_array_equal(getattr(other, name), getattr(sim, name),
                                          err_msg=name)
    assert decided > 0


def check_dynamic_run(p, mode, warm):
    """A dynamic run from a cold start (w = 0) or from the optimum at a larger lambda,
    to a tight tolerance: every event's decisions and balls at the exact optimum (the
    reduced problems of later events included). Returns the number of decisions."""
    data, lam, beta, ref = setup(p)
    w0 = reference(data, 1.5 * lam, beta).w if warm else None
    with spying() as calls:
        out, _ = solve_path(data, lam, beta, rule=mode, tol=1e-12, w0=w0)
    decided = 0
    for k, call in enumerate(calls):
        red = call.red
        assert call.mode in MODES
        assert_balls_hold(ref, red, call.u, call.t, call.gap, lam, beta)
        assert_decisions_hold(ref, red.rows, red.cols, call.ev, f"event {k}")
        decided += call.ev.n_features + call.ev.n_samples
    # the run ends at the optimum
    assert np.linalg.norm(out.w - ref.w) <= np.sqrt(2 * (max(out.gap, 0) + 1e-14)
                                                    / (lam * beta))
    return decided


@settings(max_examples=examples(200))
@given(p=problems, mode=st.sampled_from(MODES), warm=st.booleans())
def test_every_event_of_dynamic_runs_is_safe(p, mode, warm):
    check_dynamic_run(p, mode, warm)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sparse", [False, True])
def test_dynamic_runs_decide(loss, mode, sparse):
    """Non-vacuity of the dynamic runs: path steps that do screen."""
    p = dict(seed=5, loss=loss, sparse=sparse, weights=True, n=80, d=60, frac=0.2,
             gamma=0.5, epsilon=0.1, beta=1.0)
    assert check_dynamic_run(p, mode, warm=True) > 0


@pytest.mark.parametrize("loss", LOSSES)
def test_rules_on_a_reduced_problem_are_safe(loss):
    """Second events: the rules on the reduced problem left by a first event (box
    samples folded into the linear part), at perturbed restricted optima."""
    data = make_data(2, 70, 50, loss)
    lam, beta = 0.1 * data.lambda_max(), 1.0
    ref = reference(data, lam, beta)
    rng = np.random.RandomState(3)
    red = full_reduced(data)
    u = perturbed(ref, rng, 1e-5)
    t, gap = pair_at(red, u, lam, beta)
    first = screen_doubly_sparse(red, u, t, gap, lam, beta)
    assert_decisions_hold(ref, red.rows, red.cols, first)
    assert first.at_box.any() and first.features.any()
    red2 = red.shrink(~(first.at_zero | first.at_box), ~first.features, first.at_box,
                      first.box_value)
    decided = 0
    for noise in (1e-7, 1e-5, 1e-3):
        u2 = ref.w[red2.cols] + noise * rng.randn(red2.n_cols)
        t2, gap2 = pair_at(red2, u2, lam, beta)
        assert_balls_hold(ref, red2, u2, t2, gap2, lam, beta)
        for mode in MODES:
            ev = screen_doubly_sparse(red2, u2, t2, gap2, lam, beta, mode)
            assert_decisions_hold(ref, red2.rows, red2.cols, ev, f"{mode} {noise}")
            decided += ev.n_features + ev.n_samples
    assert decided > 0


@settings(max_examples=examples(400))
@given(p=problems, noise=st.sampled_from([1e-3, 1e-2, 1e-1]),
       shrink=st.sampled_from([1.0, 0.1, 1e-2, 1e-3]))
def test_rules_never_screen_beyond_the_documented_formulas(p, noise, shrink):
    """The rules as formulas: at a pair far from the optimum, handed a gap ``G`` smaller
    than its own (a ball that need not hold the optimum, so that the same-pair
    subtractions of Theorems 2-3 and the centre's shift weigh), the package decides
    what the exact formulas decide with radii 1e-6 smaller or 1e-6 larger, and fixes
    each sample at the same value. Such a ball can contradict itself (keep a variable
    by one rule that another would fix): the variables the package keeps are left out
    of the formulas' alternation too, which then takes the package's steps."""
    data, lam, beta, ref = setup(p)
    red = full_reduced(data)
    u = perturbed(ref, np.random.RandomState(p["seed"]), noise)
    t, gap = pair_at(red, u, lam, beta)
    G = shrink * own_gap(data, u, lam, beta)
    handed = replace(gap, primal=G, dual=0.0, error=0.0)
    assert handed.safe == G
    for mode in MODES:
        ev = screen_doubly_sparse(red, u, t, handed, lam, beta, mode)
        skip = dict(skip_f=ev.kept_features, skip_s=ev.kept_samples)
        F, Z, B, bv = oracle(data, u, G, lam, beta, mode, 1 - 1e-6, **skip)
        F_in, Z_in, B_in, _ = oracle(data, u, G, lam, beta, mode, 1 + 1e-6, **skip)
        for name, got, inner, outer in (("features", ev.features, F_in, F),
                                        ("at_zero", ev.at_zero, Z_in, Z),
                                        ("at_box", ev.at_box, B_in, B)):
            extra = np.flatnonzero(got & ~outer)
            assert not extra.size, f"{mode}: {name} {extra} beyond the exact rule's"
            missed = np.flatnonzero(inner & ~got)
            assert not missed.size, f"{mode}: {name} {missed} missed"
        np.testing.assert_array_equal(ev.box_value[ev.at_box], bv[ev.at_box])


def _problem(seed, loss, weights, n, d, frac, gamma, beta):
    return dict(seed=seed, loss=loss, sparse=False, weights=weights, n=n, d=d, frac=frac,
                gamma=gamma, epsilon=0.1, beta=beta)


#: Pairs (problem, perturbation seed, relative noise, handed gap / own gap) at which
#: the same-pair subtractions of Theorem 2 (first four) and Theorem 3 (last four)
#: change the decisions: found by a search over random pairs (they rarely do; a
#: subtraction counted twice screens beyond the rule).
SECTION_CASES = [
    (_problem(401, HINGE, True, 30, 20, 0.5, 0.5, 1.0), 1232, 0.1, 0.006689917398347416),
    (_problem(504, HINGE, False, 50, 40, 0.05, 0.5, 3.0), 2030, 0.1, 0.0002862615544277494),
    (_problem(22, SVR, True, 30, 20, 0.2, 1.5, 1.0), 1463, 0.1, 0.0006522188322516968),
    (_problem(229, SVR, False, 80, 40, 0.2, 0.25, 10.0), 1505, 0.1, 0.009928714036305518),
    (_problem(602, HINGE, False, 30, 20, 0.2, 0.1, 3.0), 3512, 0.1, 0.01015291658421947),
    (_problem(977, HINGE, False, 50, 20, 0.5, 0.5, 0.3), 3540, 0.1, 0.016073186635062513),
    (_problem(381, SVR, True, 50, 20, 0.5, 1.5, 10.0), 3573, 0.1, 0.16844543291491235),
    (_problem(557, SVR, True, 80, 20, 0.2, 0.1, 0.3), 3475, 0.01, 0.012716277858119867),
]


@pytest.mark.parametrize("p, seed, noise, shrink", SECTION_CASES)
@pytest.mark.parametrize("start", ["features", "samples"])
def test_ball_sections_at_recorded_pairs(p, seed, noise, shrink, start):
    data, lam, beta, ref = setup(p)
    red = full_reduced(data)
    u = perturbed(ref, np.random.RandomState(seed), noise)
    t, gap = pair_at(red, u, lam, beta)
    G = shrink * own_gap(data, u, lam, beta)
    ev = screen_doubly_sparse(red, u, t, replace(gap, primal=G, dual=0.0, error=0.0), lam,
                              beta, start=start)
    assert ev.rounds >= 2
    skip = dict(skip_f=ev.kept_features, skip_s=ev.kept_samples, start=start)
    F, Z, B, bv = oracle(data, u, G, lam, beta, "simultaneous", 1 - 1e-6, **skip)
    F_in, Z_in, B_in, _ = oracle(data, u, G, lam, beta, "simultaneous", 1 + 1e-6, **skip)
    for got, inner, outer in ((ev.features, F_in, F), (ev.at_zero, Z_in, Z),
                              (ev.at_box, B_in, B)):
        assert not (got & ~outer).any()
        assert not (inner & ~got).any()
    np.testing.assert_array_equal(ev.box_value[ev.at_box], bv[ev.at_box])


# ------------------------------------------------------------- strict gains ---
@pytest.mark.parametrize("loss, expected", [(HINGE, ((24, 11), (21, 3))),
                                            (SVR, ((28, 8), (27, 2)))])
def test_simultaneous_screens_strictly_more_at_an_intermediate_gap(loss, expected):
    data = make_data(0, 60, 40, loss, sparse=False)
    lam = 0.3 * data.lambda_max()
    ref = reference(data, lam, 1.0)
    red = full_reduced(data)
    u = ref.w + 3e-4 * np.random.RandomState(1).randn(40)
    t, gap = pair_at(red, u, lam, 1.0)
    assert 1e-4 < gap.gap < 1e-2
    sim, feat, samp = (screen_doubly_sparse(red, u, t, gap, lam, 1.0, m) for m in MODES)
    for ev in (sim, feat, samp):
        assert_decisions_hold(ref, red.rows, red.cols, ev)
    assert sim.n_features > feat.n_features and sim.n_samples > samp.n_samples
    assert sim.rounds >= 2
    assert ((sim.n_features, sim.n_samples), (feat.n_features, samp.n_samples)) == expected


# ------------------------------------------------------------------ keeping ---
def test_keeping_finds_active_variables():
    """Non-vacuity of the keep checks of ``assert_decisions_hold``."""
    kept_f = kept_s = 0
    for loss in LOSSES:
        data = make_data(1, 60, 40, loss)
        lam = 0.1 * data.lambda_max()
        ref = reference(data, lam, 1.0)
        red = full_reduced(data)
        u = perturbed(ref, np.random.RandomState(0), 1e-6)
        t, gap = pair_at(red, u, lam, 1.0)
        ev = screen_doubly_sparse(red, u, t, gap, lam, 1.0)
        assert_decisions_hold(ref, red.rows, red.cols, ev)
        kept_f += ev.kept_features.sum()
        kept_s += ev.kept_samples.sum()
    assert kept_f > 0 and kept_s > 0


@pytest.mark.parametrize("loss", LOSSES)
def test_printed_theorem_10_keeps_zero_features(loss):
    """The paper prints Theorem 10 as "LB < -lam n and lam n < UB => w*_j != 0"; that
    interval contains the whole zero region, and keeps features that are zero. The
    corrected rule (LB > lam n or UB < -lam n) never does."""
    false_printed = 0
    for seed in range(3):
        data = make_data(seed, 60, 40, loss)
        n = data.n_samples
        lam = 0.1 * data.lambda_max()
        ref = reference(data, lam, 1.0)
        red = full_reduced(data)
        rng = np.random.RandomState(seed)
        for noise in (1e-4, 1e-3, 3e-3, 1e-2):
            u = perturbed(ref, rng, noise)
            t, gap = pair_at(red, u, lam, 1.0)
            r_D, r_P = radii(gap, lam, 1.0, data.gamma, n)
            col = np.sqrt(data.col_sq_c)
            lb, ub = gap.s - col * r_D, gap.s + col * r_D
            printed = (lb < -lam * n) & (lam * n < ub)
            false_printed += int((printed & (ref.w == 0)).sum())
            corrected = keep_features(gap.s, col, r_D, gap.s_error, np.zeros_like(u), np.inf,
                                      lam, n)
            assert not (corrected & (ref.w == 0)).any()
            assert not ((lb > lam * n) | (ub < -lam * n))[ref.w == 0].any()
    assert false_printed > 0


# ----------------------------------------------------- certificate's checks ---
@pytest.mark.parametrize("loss", LOSSES)
def test_contradiction_checks_flag_wrong_decisions_only(loss):
    """At a near-optimal pair the certificate's checks flag wrong decisions (a non-zero
    feature declared zero, a sample fixed at the wrong value) and never correct ones."""
    data = make_data(2, 60, 40, loss)
    n = data.n_samples
    lam = 0.1 * data.lambda_max()
    ref = reference(data, lam, 1.0)
    red = full_reduced(data)
    u = perturbed(ref, np.random.RandomState(5), 1e-7)
    t, gap = pair_at(red, u, lam, 1.0)
    r_D, r_P = radii(gap, lam, 1.0, data.gamma, n)
    col, row = np.sqrt(data.col_sq_c), np.sqrt(data.row_sq)
    wrong_f = contradicted_features(gap.s, col, r_D, gap.s_error, lam, n)
    assert not (wrong_f & (ref.w == 0)).any()
    clear = np.abs(ref.s) > lam * n + 2 * (col * r_D + gap.s_error) + 1e-8
    assert clear.sum() >= 3 and wrong_f[clear].all()
    y, c = data.y, data.weights
    args = (t, row, r_P, gap.t_error, y, c)
    tail = (data.hinge, data.gamma, data.epsilon)
    # the true decisions: never contradicted
    flags = contradicted_samples(*args, ref.zero, ref.alpha, *tail)
    assert not flags[ref.zero | ref.box].any()
    # every sample declared wrongly (at 0 when it is not, at a box end when at 0)
    # every sample declared wrongly (at 0 when it is not, at a box end when at 0): all
    # are flagged whose optimal margin is clear of the kinks by the ball's reach
    z = zvalues(ref.t, y, loss, data.epsilon)
    reach = row * r_P + gap.t_error + 1e-8
    clear = np.minimum(np.abs(z), np.abs(z - data.gamma)) > 2 * reach
    assert clear.sum() >= 0.8 * n
    wrong_value = c * y if loss == HINGE else c
    flags = contradicted_samples(*args, ~ref.zero, wrong_value, *tail)
    assert flags[clear].all()
    if loss == SVR:  # at the other end of the box, or at either end from inside
        flags = contradicted_samples(*args, np.zeros(n, bool), -ref.alpha, *tail)
        assert flags[ref.box & clear].all()
        for end in (c, -c):
            flags = contradicted_samples(*args, np.zeros(n, bool), end, *tail)
            assert flags[ref.inside & clear].all()
