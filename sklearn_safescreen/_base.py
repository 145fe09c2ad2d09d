"""Plumbing shared by the Safe estimators.

* :func:`screened_solve`: solve a box-QP dual with screened variables held fixed, then
  certify the answer on the **full** problem and repair it if a screened variable is
  proven wrong (DESIGN.md section 3, rule 2).
* :func:`data_fingerprint`: the cheap identity of a training problem, so that
  ``warm_start`` never screens with the reference of another problem (DESIGN.md 5).
* :class:`MemoisedParams`: ``get_params`` and parameter validation without repeating
  the work at every path step.
"""

from __future__ import annotations

import functools
import hashlib
import numbers
import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import validate_parameter_constraints
from threadpoolctl import ThreadpoolController

from ._report import ScreeningEvent, ScreeningReport
from .screening.balls import gap_ball_screen, proven_violations
from .screening.svm import SVMReference
from .solvers.dual_cd import BoxQP, solve_box_qp
from .solvers.working_set import (
    WS_MIN_PROBLEM,
    solve_plain_then_working_set,
    solve_working_set,
)

#: Certificate attempts (each with a 10x tighter inner tolerance) before the screened
#: variables that keep the full gap open are released.
_CERTIFY_ATTEMPTS = 4


class MemoisedParams:
    """Mixin (before ``BaseEstimator``) for estimators refitted along a path:

    * the constructor's parameter names are read once per class (scikit-learn reads
      them with ``inspect.signature`` at every ``get_params``, which ``set_params`` and
      every ``fit`` call);
    * ``_validate_params`` checks only the parameters that changed since the last
      successful validation: a parameter is skipped when it is an immutable scalar
      (number, string, None) of the same type and value as then, since its validity is
      a function of exactly these (a path step changes one parameter).

    Together about 0.5 ms per path step, a sixth of a screened metric-learning step on
    wine."""

    @classmethod
    def _get_param_names(cls):
        return list(_param_names(cls))

    def _validate_params(self):
        params = self.get_params(deep=False)
        seen = self.__dict__.get("_validated_params", {})
        changed = {name: v for name, v in params.items()
                   if not (isinstance(v, _SCALARS) and seen.get(name) == (type(v), v))}
        if changed:
            validate_parameter_constraints(self._parameter_constraints, changed,
                                           caller_name=self.__class__.__name__)
        self._validated_params = {name: (type(v), v) for name, v in params.items()
                                  if isinstance(v, _SCALARS)}


#: Immutable parameter values whose validity is a function of their type and value.
_SCALARS = (numbers.Number, str, type(None))


@functools.cache
def _param_names(cls) -> tuple:
    from sklearn.base import BaseEstimator

    return tuple(BaseEstimator._get_param_names.__func__(cls))


class ScreeningRepairWarning(UserWarning):
    """A screened variable was proven wrong by the certificate and put back.

    This means a screening rule was unsafe: please report it. The returned solution is
    nevertheless the certified optimum of the full problem.
    """


@dataclass
class BoxSolution:
    """A certified solution of a :class:`~sklearn_safescreen.solvers.BoxQP`."""

    alpha: np.ndarray
    margins: np.ndarray  # Q alpha over all samples
    gap: float  # full-problem duality gap
    rel_gap: float
    n_iter: int
    converged: bool
    n_lower: int  # screened (reference + dynamic) at the lower end, after repairs
    n_upper: int


def single_blas_thread():
    """Context limiting BLAS to one thread.

    The solvers do many small matrix-vector products (margins of a working set, Newton
    systems of a few hundred variables); with several BLAS threads each costs a thread
    wake-up, and on a machine where anything else runs, OpenBLAS threads spin against
    it: measured here, one path step took 10x longer. The controller is built once
    (about 1 ms) and each limit costs about 0.1 ms.
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=SOLVER_BLAS_THREADS, user_api="blas")


#: BLAS threads inside a fit (see :func:`single_blas_thread`).
SOLVER_BLAS_THREADS = 1
_BLAS_CONTROLLER = None


#: Fits on fewer entries of X than this skip the BLAS limit.
_SMALL_FIT_ENTRIES = 100_000


def limit_blas_threads(fit):
    """Decorator: run an estimator's ``fit`` under :func:`single_blas_thread`."""

    @functools.wraps(fit)
    def wrapper(self, X, *args, **kwargs):
        shape = getattr(X, "shape", (0, 0))
        if len(shape) < 2 or shape[0] * shape[1] < _SMALL_FIT_ENTRIES:
            return fit(self, X, *args, **kwargs)  # the limit itself costs ~0.1 ms
        with single_blas_thread():
            return fit(self, X, *args, **kwargs)

    return wrapper


def screened_solve(problem: BoxQP, alpha0: np.ndarray, at_lower: np.ndarray,
                   at_upper: np.ndarray, *, tol: float, max_iter: int,
                   random_state: np.random.RandomState, dynamic: bool,
                   report: ScreeningReport, rule: str, value: float,
                   task: str = "", working_set: bool = True) -> BoxSolution:

    """Solve with ``at_lower``/``at_upper`` held at their bounds; certify on the full
    problem.

    The certificate computes the margins of *every* sample, the full duality gap and,
    for every screened variable, whether the gap ball of the reduced problem proves its
    bound wrong. A proven violator is released, a :class:`ScreeningRepairWarning` is
    issued and the solve continues. If no violator is proven but the full gap is above
    ``tol``, the reduced problem is solved more tightly (shrinking the ball) and, as a
    last resort, every screened variable that keeps the gap open is released.

    ``working_set=False`` keeps large problems on the plain solver (still with dynamic
    screening): working sets pay off from a nearby reference, not from a far one.
    """
    lo, hi = problem.lo, problem.hi
    alpha = _start_point(np.asarray(alpha0, dtype=np.float64), lo, hi, at_lower, at_upper)
    fixed = at_lower | at_upper
    movable = lo < hi
    inner_tol, n_iter = tol, 0
    dyn_screen = gap_ball_screen if dynamic else None
    for attempt in range(_CERTIFY_ATTEMPTS + 1):
        t0 = time.perf_counter()
        # screening on: working sets whose only permanent decisions are full-problem gap
        # balls (solvers/working_set.py); off: the plain solver on everything. Kernel
        # mode: only while the undecided samples' kernel rows fit in the row cache (each
        # round gathers its block again; measured on RBF paths: working sets 15% faster
        # at n=5000, where they fit, 20% slower at n=10000, where they are recomputed)
        undecided = int((~fixed & movable).sum())
        use_ws = (working_set and dynamic and undecided > WS_MIN_PROBLEM
                  and (problem.linear or problem.kernel.cache_capacity >= undecided))
        if use_ws:
            solver = solve_working_set
        elif dynamic and problem.linear and undecided > WS_MIN_PROBLEM:
            solver = solve_plain_then_working_set
        else:
            solver = solve_box_qp
        res = solver(problem, alpha, fixed, tol=inner_tol,
                     max_iter=max(max_iter - n_iter, 1),
                     random_state=random_state, dynamic_screen=dyn_screen)
        alpha, fixed, n_iter = res.alpha, res.fixed, n_iter + res.n_iter
        # linear mode: the solver's margins were computed from scratch at this alpha;
        # kernel mode recomputes (incremental updates would carry their round-off
        # into the certificate)
        margins = res.margins if res.margins is not None and problem.linear \
            else problem.margins(alpha)
        terms = problem.gap_terms(alpha, margins)
        gap = float(terms.sum())
        rel_gap = gap / max(abs(problem.dual_objective(alpha, margins)), 1e-300)
        elapsed = time.perf_counter() - t0
        n_dyn_lo = sum(e[0] for e in res.dynamic)
        n_dyn_hi = sum(e[1] for e in res.dynamic)
        report.add(ScreeningEvent("gap", "dynamic" if dynamic else "solve", value,
                                  n_dyn_lo, n_dyn_hi, problem.n_samples, 0.0, elapsed,
                                  task))
        screened = fixed & movable
        sc_lo = screened & (alpha <= lo)
        sc_hi = screened & (alpha >= hi)
        wrong = proven_violations(margins, problem.p, problem.sqnorm, res.gap, sc_lo,
                                  sc_hi)
        if wrong.any():
            warnings.warn(
                f"certificate: {int(wrong.sum())} screened variable(s) violate their "
                f"optimality condition at {rule} value={value:.6g}; they were put back "
                "and the problem re-solved. Please report this (a rule was unsafe).",
                ScreeningRepairWarning, stacklevel=3)
            fixed &= ~wrong
            report.add(ScreeningEvent(rule, "repair", value, -int((wrong & sc_lo).sum()),
                                      -int((wrong & sc_hi).sum()), problem.n_samples,
                                      task=task))
            continue
        if rel_gap <= tol or not res.converged:
            break
        if attempt == _CERTIFY_ATTEMPTS - 1:
            # the reduced optimum is certified only up to the ball; release what keeps
            # the full gap open (no proof of a wrong decision, so no warning)
            fixed &= ~(screened & (terms > 0))
        inner_tol *= 0.1
    if not res.converged:
        warnings.warn(f"the solver stopped at max_iter={max_iter} with relative duality "
                      f"gap {rel_gap:.3g} > tol={tol:g} (value={value:.6g}); increase "
                      "max_iter or tol.", ConvergenceWarning, stacklevel=3)
    if dynamic:
        # the gap ball of the full problem at the returned point proves the bound of
        # most samples already there: count them as screened (nothing moves)
        lo_m, hi_m = gap_ball_screen(margins, problem.p, problem.sqnorm, gap)
        fixed = fixed | (lo_m & (alpha <= lo)) | (hi_m & (alpha >= hi))
    screened = fixed & movable
    return BoxSolution(alpha, margins, gap, rel_gap, n_iter, res.converged,
                       int((screened & (alpha <= lo)).sum()),
                       int((screened & (alpha >= hi)).sum()))


#: Working sets are used when the reference's regularisation value is within this ratio
#: of the target (measured: from a far reference, such as a cold fit's closed form at
#: C_min, plain coordinate descent handing over to working sets is faster).
WORKING_SET_RATIO = 100.0


def near_reference(ref_value: float | None, value: float) -> bool:
    """Whether a reference at ``ref_value`` is near enough for working sets."""
    return ref_value is not None and 1.0 / WORKING_SET_RATIO <= value / ref_value \
        <= WORKING_SET_RATIO


@njit(cache=True, nogil=True)
def _start_point(alpha0, lo, hi, at_lower, at_upper):
    """``alpha0`` clipped to the box, screened variables at their bound."""
    out = np.empty(alpha0.size)
    for i in range(alpha0.size):
        if at_lower[i]:
            out[i] = lo[i]
        elif at_upper[i]:
            out[i] = hi[i]
        else:
            out[i] = min(max(alpha0[i], lo[i]), hi[i])
    return out


def seed_alpha(ref, problem: BoxQP, value: float) -> np.ndarray:
    """Alpha seeding for a path step: samples at an end of the reference's box stay at
    that end of the new box (their side of the hinge is likely kept), the others keep
    their value clipped to the new box. Only a start point: safety does not depend on
    it."""
    return _seed(ref.alpha, problem.lo, problem.hi, ref.C / value)


@njit(cache=True, nogil=True)
def _seed(alpha, lo, hi, scale):
    out = np.empty(alpha.size)
    for i in range(alpha.size):
        a = alpha[i]
        if a > 0.0 and a >= hi[i] * scale:  # at the top of the reference's box
            out[i] = hi[i]
        elif a < 0.0 and a <= lo[i] * scale:  # at its bottom
            out[i] = lo[i]
        else:
            out[i] = min(max(a, lo[i]), hi[i])
    return out


def path_step(problem: BoxQP, value: float, ref, *, screen, rule: str | None, tol: float,
              max_iter: int, rng: np.random.RandomState, report: ScreeningReport,
              label: str, verbose: int, task: str = ""):
    """One step of a box-QP path (SafeSVC, SafeLAD): screen from the reference, seed
    the start point, solve with certificate, and return the new reference.

    ``screen(ref, value)`` applies the estimator's rule (a ``ScreeningResult``);
    ``ref=None`` is a cold solve from zero. Working sets are used only from a near
    reference (:func:`near_reference`). Returns ``(SVMReference, n_iter)``.
    """
    n = problem.n_samples
    t0 = time.perf_counter()
    if ref is None or rule is None:
        at_lower = at_upper = np.zeros(n, dtype=bool)
        alpha0 = np.zeros(n) if ref is None else seed_alpha(ref, problem, value)
    else:
        res = screen(ref, value)
        at_lower, at_upper = res.at_lower, res.at_upper
        alpha0 = seed_alpha(ref, problem, value)
        report.add(ScreeningEvent(rule, "reference", value, int(at_lower.sum()),
                                  int(at_upper.sum()), n, time.perf_counter() - t0,
                                  task=task))
    sol = screened_solve(problem, alpha0, at_lower, at_upper, tol=tol, max_iter=max_iter,
                         random_state=rng, dynamic=rule is not None, report=report,
                         rule=rule or "none", value=value, task=task,
                         working_set=near_reference(None if ref is None else ref.C, value))
    report.n_screened = sol.n_lower + sol.n_upper
    if verbose:
        print(f"[{label}]{' ' + task if task else ''} C={value:<10.4g} screened "
              f"R={sol.n_lower:<6d} L={sol.n_upper:<6d} "
              f"free={n - sol.n_lower - sol.n_upper:<6d} gap={sol.rel_gap:.2e} "
              f"iter={sol.n_iter:<5d} time={time.perf_counter() - t0:.3f}s")
    return SVMReference(value, sol.alpha, sol.margins, max(sol.gap, 0.0)), sol.n_iter


def data_fingerprint(*parts) -> str:
    """A hash of arrays (dense or sparse) and plain parameters.

    Large dense float64 arrays go through :func:`_content_digest` first (several times
    cheaper than hashing every byte, and still certain to notice any single change).
    """
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        if sp.issparse(part):
            part = part.tocsr()
            for arr in (part.data, part.indices, part.indptr):
                h.update(np.ascontiguousarray(arr).tobytes())
            h.update(repr(part.shape).encode())
        elif isinstance(part, np.ndarray):
            if part.dtype == np.float64 and part.ndim <= 2 and part.size > _DIGEST_MIN_SIZE:
                part = _content_digest(part.reshape(part.shape[0], -1))
            h.update(np.ascontiguousarray(part).tobytes())
            h.update(repr((part.shape, part.dtype.str)).encode())
        else:
            h.update(repr(part).encode())
    return h.hexdigest()


#: Dense matrices larger than this are fingerprinted through :func:`_content_digest`.
_DIGEST_MIN_SIZE = 4096


def _same_memory(a, b) -> bool:
    """Whether ``b`` is the numeric ndarray ``a`` or a view of exactly its elements."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    if a.dtype.kind not in "biuf":  # object arrays: the digest sees pointers only
        return False
    return a is b or (a.dtype == b.dtype and a.size == b.size
                      and a.ctypes.data == b.ctypes.data
                      and (a.flags.c_contiguous and b.flags.c_contiguous
                           or (a.shape, a.strides) == (b.shape, b.strides)))


@dataclass
class InputMemo:
    """The inputs of the last validated fit, for warm starts on the very same arrays.

    Input validation (shapes, dtypes, finite values, non-negative weights) depends only
    on the content of the arrays. Along a path every fit receives the same objects, and
    validating them again cost SafeLAD ~0.7 ms of a ~4 ms step. When validation returned
    the caller's arrays unchanged (or views of exactly their memory), a later fit that
    receives the same objects whose content digest (:func:`data_fingerprint`) equals
    the validated one skips it: an in-place change of any entry changes the digest
    (:func:`_content_digest`), so the new content is validated again.

    ``raw`` holds the caller's objects (``None`` for an omitted argument),
    ``validated`` what validation returned, ``digest`` the fingerprint of ``validated``.
    """

    raw: tuple
    validated: tuple
    digest: str

    @classmethod
    def remember(cls, raw: tuple, validated: tuple) -> InputMemo | None:
        """A memo when every given argument came back from validation as the same
        numeric array or a view of exactly its memory (a converted copy would hide later
        changes to the original)."""
        for r, v in zip(raw, validated, strict=True):
            if r is not None and not _same_memory(r, v):
                return None
        return cls(raw, validated, data_fingerprint(*validated))

    def reuse(self, raw: tuple) -> str | None:
        """The digest if ``raw`` are the remembered objects with unchanged content."""
        if len(raw) != len(self.raw) or any(
                a is not b for a, b in zip(raw, self.raw, strict=True)):
            return None
        digest = data_fingerprint(*self.validated)
        return digest if digest == self.digest else None


def memoised_validation(estimator, raw: tuple, validate) -> tuple[tuple, str | None]:
    """``(validate(), digest)`` through the estimator's :class:`InputMemo` (warm starts
    only): the remembered result when ``raw`` are the same unchanged arrays, else a new
    validation, remembered when possible. ``digest`` identifies the validated content,
    or is ``None`` when it could not be remembered (fingerprint the arrays instead)."""
    memo = getattr(estimator, "_input_memo", None) if estimator.warm_start else None
    if memo is not None:
        digest = memo.reuse(raw)
        if digest is not None:
            return memo.validated, digest
    validated = validate()
    memo = InputMemo.remember(raw, validated) if estimator.warm_start else None
    estimator._input_memo = memo
    return validated, None if memo is None else memo.digest


def _content_digest(X):
    r"""A cheap identity of a dense matrix's exact content, for ``data_fingerprint``.

    Hashing the whole of ``X`` with blake2b costs ~2 ms for a 20000 x 8 matrix, a fifth
    of a screened path step. This digest: split every float64 into its two 32-bit
    halves :math:`V` (an ``n x 2d`` integer matrix) and take two independent multilinear
    hashes :math:`h = a^\top (V b) \bmod 2^{64}` with fixed pseudo-random odd 64-bit
    :math:`a, b`. Every half has an odd coefficient :math:`a_ib_j` and differs by less
    than :math:`2^{32}`, so a change of any single entry (down to one bit, including a
    sign) always changes ``h``, and several changes cancel only if a sum of terms
    :math:`a_ib_j\Delta_{ij}` vanishes modulo :math:`2^{64}` in both hashes (for random
    coefficients, probability about :math:`2^{-32}` each); row and column permutations
    change ``h``. A collision would only make ``warm_start`` screen from another
    problem's reference, which the full-problem certificate still catches.
    """
    V = np.ascontiguousarray(X).view(np.uint32)  # no copy
    n, m = V.shape
    return np.concatenate([
        np.array(X.shape, dtype=np.uint64),
        _multilinear_hashes(V, _odd_coefficients(n, 1), _odd_coefficients(m, -1),
                            _odd_coefficients(n, 2), _odd_coefficients(m, -2))])


@njit(cache=True)
def _multilinear_hashes(V, a1, b1, a2, b2):
    """``(a1' V b1, a2' V b2) mod 2^64`` in one pass (uint64 arithmetic wraps)."""
    h1 = np.uint64(0)
    h2 = np.uint64(0)
    for i in range(V.shape[0]):
        r1 = np.uint64(0)
        r2 = np.uint64(0)
        for j in range(V.shape[1]):
            v = np.uint64(V[i, j])
            r1 += v * b1[j]
            r2 += v * b2[j]
        h1 += a1[i] * r1
        h2 += a2[i] * r2
    out = np.empty(2, dtype=np.uint64)
    out[0] = h1
    out[1] = h2
    return out


@functools.lru_cache(maxsize=8)
def _odd_coefficients(size: int, seed: int) -> np.ndarray:
    """Fixed pseudo-random odd 64-bit integers (cached: a path reuses them)."""
    rng = np.random.RandomState(abs(seed) * 2 + (seed < 0))
    coef = rng.randint(0, 2**63, size=size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    coef.flags.writeable = False
    return coef
