"""The rules' contract (``doc/developers/architecture.rst``, "Contracts"): a rule never
mutates its inputs.

Every public function of the rule modules of ``sklearn_safescreen/screening`` (the
compiled kernels included) is called on small random problems built as the other
screening tests build them. Before the call every array reachable from the arguments
(arrays, the array attributes of reference objects, the data of sparse matrices) is
copied and marked read-only, so that a write raises; after it, every such array must be
bitwise what it was, and every attribute of every object still bound to the same value
(nothing rebound, nothing added but the documented memoised quantities of a problem's
data). A coverage test makes sure that a public function added later gets a case here.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest
import scipy.sparse as sp
from _box_models import linear_problem
from _doubly_sparse_models import HINGE, SVR, make_data, solve_path
from _lp_svm_models import make_problem as make_lp_problem
from _lp_svm_models import solve_full
from _svm_truth import augment, few_cd_epochs, noisy_data
from _triplet_models import small_problem

from sklearn_safescreen.problems import triplet_problem as tp
from sklearn_safescreen.problems.box_qp import BoxQPReference
from sklearn_safescreen.problems.doubly_sparse import ReducedProblem
from sklearn_safescreen.problems.lp_svm import LPSVMData
from sklearn_safescreen.screening import (
    _balls_fast,
    _lp_svm_fast,
    _triplet_cone_fast,
    _triplet_fast,
    balls,
    lad,
    svm,
)
from sklearn_safescreen.screening import doubly_sparse as ds
from sklearn_safescreen.screening import lp_svm as lps
from sklearn_safescreen.screening import triplet as tr
from sklearn_safescreen.screening import triplet_bounds as tb

#: The rule modules whose public functions must not mutate their inputs.
RULE_MODULES = (balls, _balls_fast, svm, lad, ds, lps, _lp_svm_fast, tr, tb, _triplet_fast,
                _triplet_cone_fast)

#: Classes of rule modules whose public (class)methods are rules too (constructors of
#: references from a pair).
RULE_CLASSMETHODS = (lps.LPReference.build, lps.PrimalCut.build)

#: Attributes an input object may gain during a call: memoised quantities of a
#: problem's data that depend on the data only (``functools.cached_property``).
MEMOISED = {(LPSVMData, "sorted_columns"), (BoxQPReference, "sq_norm_w"),
            (BoxQPReference, "sq_norm_w_error")}


class Call(NamedTuple):
    func: Callable
    args: tuple
    kwargs: dict


def call(func, *args, **kwargs) -> Call:
    return Call(func, args, kwargs)


def qualified(func) -> str:
    return f"{func.__module__}.{func.__qualname__}"


# ------------------------------------------------------------- snapshots ---
_SCALARS = (int, float, complex, bool, str, bytes, type(None), np.generic)


def _walk(obj, path, seen, arrays, attrs, depth=0):
    """Every array reachable from ``obj`` (``arrays``: path -> array) and the attribute
    bindings of every object met (``attrs``: path -> (object, {name: value}))."""
    if isinstance(obj, _SCALARS) or callable(obj) and not hasattr(obj, "__dict__"):
        return
    if id(obj) in seen or depth > 6:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        arrays[path] = obj
        return
    if sp.issparse(obj):
        for name in ("data", "indices", "indptr", "row", "col"):
            if isinstance(getattr(obj, name, None), np.ndarray):
                arrays[f"{path}.{name}"] = getattr(obj, name)
        return
    if isinstance(obj, (tuple, list)):
        for i, item in enumerate(obj):
            _walk(item, f"{path}[{i}]", seen, arrays, attrs, depth + 1)
        return
    if isinstance(obj, dict):
        for key, item in obj.items():
            _walk(item, f"{path}[{key!r}]", seen, arrays, attrs, depth + 1)
        return
    if isinstance(obj, (types.FunctionType, types.MethodType, types.ModuleType, type)):
        return
    fields = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    if dataclasses.is_dataclass(obj):
        fields.update({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    attrs[path] = (obj, fields)
    for name, value in fields.items():
        _walk(value, f"{path}.{name}", seen, arrays, attrs, depth + 1)


def snapshot_and_freeze(args, kwargs):
    arrays, attrs = {}, {}
    seen = set()
    for i, a in enumerate(args):
        _walk(a, f"arg{i}", seen, arrays, attrs)
    for k, a in kwargs.items():
        _walk(a, k, seen, arrays, attrs)
    before = {p: (a, a.copy(), a.flags.writeable) for p, a in arrays.items()}
    for a in arrays.values():
        a.flags.writeable = False
    bindings = {p: (obj, dict(fields)) for p, (obj, fields) in attrs.items()}
    return before, bindings


def assert_unchanged(name, before, bindings):
    for path, (arr, copy, writeable) in before.items():
        same = (arr.dtype == copy.dtype and arr.shape == copy.shape
                and arr.tobytes() == copy.tobytes())
        assert same, f"{name} changed its input {path}"
        arr.flags.writeable = writeable
    for path, (obj, fields) in bindings.items():
        now = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
        if dataclasses.is_dataclass(obj):
            now.update({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
        added = {k for k in now.keys() - fields.keys() if (type(obj), k) not in MEMOISED}
        assert not added, f"{name} added {sorted(added)} to its input {path}"
        for key, value in fields.items():
            assert key in now, f"{name} deleted {path}.{key}"
            if isinstance(value, _SCALARS):
                assert now[key] == value or (value != value and now[key] != now[key]), \
                    f"{name} changed {path}.{key}"
            else:
                assert now[key] is value, f"{name} rebound {path}.{key}"


def run_pure(c: Call):
    name = qualified(c.func)
    before, bindings = snapshot_and_freeze(c.args, c.kwargs)
    try:
        out = c.func(*c.args, **c.kwargs)
    except ValueError as exc:
        if "read-only" in str(exc) or "not writeable" in str(exc):
            raise AssertionError(f"{name} cannot take a read-only input (it writes into "
                                 f"it, or a compiled kernel declares it writable): {exc}"
                                 ) from exc
        raise
    assert_unchanged(name, before, bindings)
    return out


# ----------------------------------------------------------------- cases ---
def svm_calls(seed, kernel_product):
    """BT1, DVI, BT2, IT and their dispatcher from an inexact reference of the box-QP
    module (compensated margins with per-sample error bounds), both path directions."""
    X, y = noisy_data(seed, 40, 3)
    C_ref = 1.0
    Z = y[:, None] * augment(X, 1.0)
    Q = Z @ Z.T
    weights = np.random.RandomState(seed).uniform(0.0, 2.0, y.size)
    alpha = few_cd_epochs(C_ref, Q, 20, weights=weights, seed=seed).alpha
    ref = linear_problem(X, y, C_ref).reference(C_ref, alpha)
    sqnorm = np.einsum("ij,ij->i", Z, Z)

    def q_matvec(v):
        return Q @ v

    qv_error = (lambda: np.full(y.size, 1e-14)) if kernel_product else None
    out = []
    for C in (0.6, 1.7):
        out += [call(svm.ball_test_1, ref, C, sqnorm, weights),
                call(svm.dvi, ref, C, sqnorm, weights),
                call(svm.ball_test_2, ref, C, sqnorm, weights, q_matvec, qv_error),
                call(svm.intersection_test, ref, C, sqnorm, weights, q_matvec, qv_error)]
        out += [call(svm.screen_svm, rule, ref, C, sqnorm, weights, q_matvec, qv_error)
                for rule in svm.SVM_RULES]
    out.append(call(svm.fresh_product_error, sqnorm, weights))
    return out


def lad_and_ball_calls(seed):
    """DVI for LAD, and the regions and decisions of balls.py they are built from."""
    rng = np.random.RandomState(seed)
    n, C_ref = 40, 2.0
    G0 = rng.randn(n, 4)
    G = G0 @ G0.T + 1.0
    y = G0 @ rng.randn(4) + 0.3 * rng.randn(n)
    weights = rng.uniform(0.0, 2.0, n)
    alpha = C_ref * weights * rng.uniform(-1.0, 1.0, n)
    ref = BoxQPReference(C_ref, alpha, G @ alpha, 1e-3, np.full(n, 1e-13), 1e-12)
    sqnorm = np.diag(G).copy()
    znorm = np.sqrt(sqnorm)
    proj1, r1, _, e1 = balls.reference_ball(ref, 2.4)
    proj2 = proj1 + 0.1 * rng.randn(n)
    margins = G @ (alpha * 0.9)
    at_lower, at_upper = rng.rand(n) < 0.3, rng.rand(n) < 0.3
    out = [call(lad.dvi_lad, ref, C, sqnorm, y, weights) for C in (1.5, 2.5)]
    out += [call(lad.screen_lad, "DVI", ref, 2.5, sqnorm, y, weights),
            call(balls.reference_ball, ref, 2.4),
            call(balls.ball_bounds, proj1, r1, znorm, e1),
            call(balls.decide, proj1 - 1.0, proj1 + 1.0, y, weights > 0.5),
            call(balls.decide, proj1 - 1.0, proj1 + 1.0, 1.0),
            call(balls.gap_radius, 1e-3),
            call(balls.two_ball_bounds, proj1, r1, proj2, 0.8 * r1, proj1 - proj2,
                 0.3 * r1, znorm, e1, e1, 1e-9 * r1),
            call(balls.two_ball_bounds, proj1, r1, proj2, 0.8 * r1, proj1 - proj2,
                 0.3 * r1, znorm),
            call(balls.gap_ball_screen, margins, y, sqnorm, 1e-3),
            call(balls.proven_violations, margins, y, sqnorm, 1e-3, at_lower, at_upper,
                 np.full(n, 1e-12), 1e-12),
            call(_balls_fast.gap_ball_masks, margins, y, sqnorm, 0.03, 1e-12, 1),
            call(_balls_fast.two_ball_core, proj1, proj2, proj1 - proj2, znorm, e1, e1,
                 r1, 0.8 * r1, True, 0.3 * r1, 0.1 * r1, 0.5 * r1, -1.0, 1.0, 1e-12, 1e-9,
                 1e-12, 1e-12, 1e-9 * r1, 1.1e-16, False),
            call(_balls_fast.ball_two_terms, margins, e1, proj2, e1, alpha, weights,
                 np.where(margins < 1.0, weights, 0.0), 2.5, 1.1e-16),
            call(balls.reference_ball_screen, ref, 2.4, znorm, y, weights > 0.5),
            call(balls.reference_ball_screen, ref, 2.4, znorm, 1.0, weights > 0.5),
            call(_balls_fast.reference_ball_masks, ref.margins, np.full(n, 1e-13), 1.1,
                 0.3, znorm, y, (weights > 0.5).view(np.uint8), 1e-9, 1.1e-16)]
    return out


def doubly_sparse_calls(seed, loss, sparse):
    data = make_data(seed, 40, 20, loss, sparse=sparse, gamma=0.4)
    lam, beta = 0.3 * data.lambda_max(), 1.0
    n, d = data.n_samples, data.n_features
    u = solve_path(data, lam, beta, tol=1e-9)[0].w
    u = u + 1e-3 * np.random.RandomState(seed).randn(d)
    red = ReducedProblem.build(data, np.arange(n), np.arange(d), np.zeros(n, bool),
                               np.zeros(n))
    t = red.margins(u)
    gap = red.gap(u, t, lam, beta)
    r_D, r_P = ds.radii(gap, lam, beta, data.gamma, n)
    col_norm, row_norm = np.sqrt(red.col_sq_c), np.sqrt(red.row_sq)
    rng = np.random.RandomState(seed + 1)
    kept_f, kept_s = rng.rand(d) < 0.2, rng.rand(n) < 0.2
    at_zero = rng.rand(n) < 0.5
    box_value = np.where(at_zero, 0.0, data.weights * np.sign(data.y))
    hinge = data.hinge
    out = [call(ds.radii, gap, lam, beta, data.gamma, n),
           call(ds.feature_bounds, gap.s, col_norm, r_D, gap.s_error),
           call(ds.screen_features, gap.s, col_norm, r_D, gap.s_error, lam, n),
           call(ds.keep_features, gap.s, col_norm, r_D, gap.s_error, u, r_P, lam, n),
           call(ds.sample_decisions, t, row_norm, r_P, gap.t_error, data.y, data.weights,
                hinge, data.gamma, data.epsilon),
           call(ds.keep_samples_dual, gap.alpha, data.weights, r_D),
           call(ds.contradicted_features, gap.s, col_norm, r_D, gap.s_error, lam, n),
           call(ds.contradicted_samples, t, row_norm, r_P, gap.t_error, data.y,
                data.weights, at_zero, box_value, hinge, data.gamma, data.epsilon)]
    for mode in ds.DOUBLY_SPARSE_RULES:
        out.append(call(ds.screen_doubly_sparse, red, u, t, gap, lam, beta, mode))
    out.append(call(ds.screen_doubly_sparse, red, u, t, gap, lam, beta, "simultaneous",
                    kept_features=kept_f, kept_samples=kept_s, start="samples"))
    return out


def lp_svm_calls(seed, sparse, weights):
    X, y, s = make_lp_problem(seed, n=40, d=25, sparse=sparse, weights=weights)
    data = LPSVMData(X, y, s)
    lam = 0.8 * data.lambda_max()  # near lambda_max: features and samples are screened
    opt = solve_full(X, y, s, lam)
    rng = np.random.RandomState(seed)
    w = opt.w + 1e-6 * rng.randn(opt.w.size)
    alpha = y * opt.a
    ref = lps.LPReference.build(data, lam, w, alpha)
    cut = lps.PrimalCut.build(data, lam, ref)
    at_zero = rng.rand(y.size) < 0.2
    at_box = (rng.rand(y.size) < 0.2) & ~at_zero
    features = rng.rand(opt.w.size) < 0.3
    # the margin kernels' inputs, as lps.margin_bounds prepares them (dense and CSR)
    Zd = np.ascontiguousarray(data.Z.toarray() if sp.issparse(data.Z) else data.Z)
    Zs = sp.csr_matrix(Zd)
    positive_m, positive_p = cut.c_minus > 0.0, cut.c_plus > 0.0
    inv_m = np.where(positive_m, 1.0 / np.where(positive_m, cut.c_minus, 1.0), 0.0)
    inv_p = np.where(positive_p, 1.0 / np.where(positive_p, cut.c_plus, 1.0), 0.0)
    negative = (cut.c_minus < 0.0) | (cut.c_plus < 0.0)
    out = [call(lps.LPReference.build, data, lam, w, alpha),
           call(lps.correlation_bounds, data, lam, ref),
           call(lps.correlation_bounds, data, lam, ref, at_zero, at_box),
           call(_lp_svm_fast.knapsack_bounds, data.sorted_columns.values,
                data.sorted_columns.rows, data.sorted_columns.start, data.s.copy(), 1.0,
                5.0, float(data.s.sum()), data.col_max, lps.U),
           call(lps.screen_features, data, lam, ref, at_zero, at_box),
           call(lps.PrimalCut.build, data, lam, ref),
           call(lps.PrimalCut.build, data, lam, ref, rng.rand(y.size)),
           call(lps.margin_bounds, data, cut, ~features),
           call(_lp_svm_fast.margin_bounds_dense, Zd, np.flatnonzero(inv_m + inv_p),
                inv_m, inv_p, np.flatnonzero(negative), cut.c_minus, cut.c_plus, cut.k,
                lps.U),
           call(_lp_svm_fast.margin_bounds_csr, Zs.data, Zs.indices, Zs.indptr, inv_m,
                inv_p, negative.view(np.uint8), int(negative.sum()), cut.c_minus,
                cut.c_plus, cut.k, lps.U),
           call(lps.screen_samples, data, cut, features),
           call(lps.screen_lp_svm, data, lam, w, alpha, reference=ref),
           call(lps.screen_lp_svm, data, lam, w, alpha, "samples", synergy=False)]
    out += [call(lps.screen_lp_svm, data, lam * 0.98, w, alpha, mode)
            for mode in lps.LP_SVM_RULES]
    return out


def triplet_calls(seed, diagonal, gamma):
    """Every ball of triplet_bounds and every rule of triplet / _triplet_fast, from an
    inexact reference at lam0 for the target lam (each call its own status and ranges,
    which the calls decide or change, so that a write shows in the bitwise check too)."""
    X, y, ts = small_problem(seed, n=21, d=3, k=2, diagonal=diagonal)
    lam_L, G_pos = tp.closed_form(ts, gamma, diagonal)
    lam0, lam = 0.3 * lam_L, 0.25 * lam_L
    prob = tp.TripletProblem(ts, gamma, diagonal)
    M0 = G_pos / lam0
    ev0 = prob.evaluate(M0, lam0)
    ev = prob.evaluate(M0, lam)
    eps = tb.rrpb_eps(ev0.gap, lam0)
    p_img = prob.evaluate(ev.S_pos / lam, lam).primal
    z0 = tp.triplet_values(ts, M0, diagonal)
    idx = np.arange(ts.n_triplets, dtype=np.int32)
    rng = np.random.RandomState(seed)
    zrad = np.where(rng.rand(z0.size) < 0.5, 1e-3, 0.0)
    decided = rng.rand(idx.size) < 0.1
    status = np.where(rng.rand(z0.size) < 0.1, 2, 0).astype(np.int8)
    m = float(np.linalg.norm(M0))
    label, lo, hi = tb.rrpb_ranges(z0, ts.hnorm, m, eps, lam0, gamma)
    balls_ = [tb.gb(M0, ev.grad, lam), tb.pgb(M0, ev.grad, lam, diagonal),
              tb.gb_linear(M0, ev.grad, lam, diagonal), tb.dgb(M0, ev.gap, lam),
              tb.cdgb(ev.S_pos, p_img, ev.dual, lam), tb.rrpb(M0, lam0, lam, eps)]
    out = [call(tb.inflate, 0.1, M0), call(tb.gb, M0, ev.grad, lam),
           call(tb.pgb, M0, ev.grad, lam, diagonal),
           call(tb.gb_linear, M0, ev.grad, lam, diagonal), call(tb.dgb, M0, ev.gap, lam),
           call(tb.cdgb, ev.S_pos, p_img, ev.dual, lam), call(tb.rrpb, M0, lam0, lam, eps),
           call(tb.rpb, M0, lam0, lam), call(tb.rrpb_eps, ev0.gap, lam0),
           call(tb.rrpb_ranges, z0, ts.hnorm, m, eps, lam0, gamma),
           call(tb.merge_rrpb_ranges, z0 * 1.01, ts.hnorm, m, eps, lam, gamma, label.copy(),
                lo.copy(), hi.copy()),
           call(tb.merge_rrpb_ranges, z0 * 1.01, ts.hnorm, m, eps, lam, gamma, label.copy(),
                lo.copy(), hi.copy(), zrad > 0),
           call(tb.scaled_sphere_screen_rad, z0, zrad, ts.hnorm, 1.1, 0.05, gamma,
                status.copy()),
           call(_triplet_fast.scaled_sphere_screen, z0, ts.hnorm, 1.1, 0.05, gamma,
                status.copy()),
           call(tb.bounded_values, z0, zrad, ts.hnorm, status.copy(), 1.1, 0.05, gamma,
                True),
           call(tb.bounded_values, z0, None, ts.hnorm, status.copy(), 1.1, 0.05, gamma,
                False),
           call(_triplet_fast.range_screen, label, lo, hi, lam, status.copy()),
           call(_triplet_fast.rrpb_ranges_pass, z0, ts.hnorm, m, eps, lam, gamma,
                label.copy(), lo.copy(), hi.copy(), (zrad > 0).view(np.int8)),
           call(tr.decide, z0 - 0.1, z0 + 0.1, gamma),
           call(tr.sphere_bounds, z0, ts.hnorm, 0.1)]
    P = balls_[1].plane
    hp = tp.triplet_values(ts, P, diagonal)
    pq, pp = float(np.sum(P * M0)), float(np.sum(P * P))
    out += [call(tr.linear_min, z0, ts.hnorm, 0.1, hp, pq, pp),
            call(tr.linear_bounds, z0, ts.hnorm, 0.1, hp, pq, pp)]
    for ball in balls_:
        for rule in tr.TRIPLET_RULES:
            kw = {}
            if rule == "sdp" and not ball.psd_center:
                kw["x0_values"] = z0
            if ball.scale is not None:
                kw["ref_values"] = z0
            out.append(call(tr.screen_triplets, ts, ball, rule, gamma, diagonal, idx, **kw))
    ball = balls_[5]
    out.append(call(tr.screen_triplets, ts, ball, "sdp", gamma, diagonal, idx,
                    decided=decided, max_eig=3,
                    values=lambda A: tp.triplet_values(ts, A, diagonal, idx)))
    Q, r2 = balls_[1].center, balls_[1].radius ** 2
    if diagonal:
        out.append(call(_triplet_cone_fast.diag_pass, ts.diff, ts.pos, ts.neg, idx, Q, r2))
    else:
        out += [call(_triplet_cone_fast.sdp_pass, ts.diff, ts.pos, ts.neg, idx, Q, r2, z0,
                     gamma, True, ts.hnorm, fast, 5)
                for fast in (True, False)]
        cprob = tp.TripletProblem(ts, gamma, diagonal)
        cev = cprob.evaluate(M0, lam)
        hn = ts.hnorm[cprob.work]
        out += [call(_triplet_fast.iterate_ball_codes, cprob.cdiff, cprob.cpos, cprob.cneg,
                     hn, cev.z, cev.M, cev.grad, cev.gap, lam, gamma, *flags)
                for flags in ((True, True, True), (False, True, False))]
    return out


CASES = {
    **{f"svm-{kp}": (svm_calls, (3, kp)) for kp in (False, True)},
    "lad-balls": (lad_and_ball_calls, (4,)),
    **{f"doubly-sparse-{loss}-{'sparse' if s else 'dense'}":
       (doubly_sparse_calls, (5, loss, s)) for loss in (HINGE, SVR) for s in (False, True)},
    **{f"lp-svm-{'sparse' if s else 'dense'}-{'w' if w else 'u'}":
       (lp_svm_calls, (6, s, w)) for s in (False, True) for w in (False, True)},
    **{f"triplet-{'diag' if dg else 'full'}-{g}": (triplet_calls, (7, dg, g))
       for dg in (False, True) for g in (0.0, 0.05)},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rules_leave_their_inputs_unchanged(case):
    build, args = CASES[case]
    calls = build(*args)
    assert calls
    failures = []
    for c in calls:
        try:
            run_pure(c)
        except AssertionError as exc:  # report every offending rule of the case at once
            failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)


def public_rules():
    found = set()
    for mod in RULE_MODULES:
        for name, value in vars(mod).items():
            if name.startswith("_") or isinstance(value, type) or not callable(value):
                continue
            if getattr(value, "__module__", None) == mod.__name__:
                found.add(qualified(value))
    return found | {qualified(f) for f in RULE_CLASSMETHODS}


def test_every_public_rule_has_a_case():
    covered = set()
    for build, args in CASES.values():
        covered |= {qualified(c.func) for c in build(*args)}
    missing = public_rules() - covered
    assert not missing, f"public rules without a non-mutation case: {sorted(missing)}"
    assert len(public_rules()) > 40


def test_the_check_catches_a_write():
    """The harness itself: an in-place write, a rebinding and an added attribute are
    each reported."""
    def writes(a):
        a[0] = 1.0

    with pytest.raises(AssertionError, match="cannot take a read-only input"):
        run_pure(call(writes, np.zeros(3)))

    ref = BoxQPReference(1.0, np.zeros(3), np.zeros(3), 0.0)

    def rebinds(r):
        object.__setattr__(r, "alpha", np.ones(3))

    with pytest.raises(AssertionError, match="rebound"):
        run_pure(call(rebinds, ref))

    class Holder:
        def __init__(self):
            self.a = np.zeros(2)

    def adds(h):
        h.cache = 1

    with pytest.raises(AssertionError, match="added"):
        run_pure(call(adds, Holder()))
