r"""The exact LP-SVM solver: HiGHS inside a column-and-row generation loop.

The problem solved is the **reduced** LP-SVM left by screening
(:mod:`sklearn_safescreen.problems.lp_svm`): its *universe* is the features not proven
zero and the samples not proven at :math:`a_i=0` or at the box, the samples proven at
the box entering as a linear term. Within the universe a **working set** of features
(columns) and samples is solved by HiGHS. The other universe features are held at 0;
each universe sample is in one of three working states: a **row** (its hinge exact),
**linear** (its loss replaced by :math:`s_i(1-z_i^\top w)`, as if at the box: no row) or
**out** (its loss replaced by 0, as if at :math:`a_i=0`). Both replacements are minorants
of the hinge, and exact where the margin is on their side of 1, so only the samples on
the margin need rows: the restricted LPs stay small. Then the reduced problem is
priced:

* a column whose reduced cost is negative, i.e. :math:`Z_{:j}^\top a>\lambda n` for
  :math:`w_j>0` or :math:`<-\lambda n` for :math:`w_j<0`, for the LP's dual :math:`a`
  (the row marginals, with :math:`a_i=s_i` on the box samples), would lower the
  objective: it joins (a working feature has a column for each sign it may take; along
  a path, only its known sign);
* a sample left out whose margin :math:`z_i^\top w<1`, or a linear one whose margin
  :math:`z_i^\top w>1`, is where its replacement is not the hinge: it becomes a row.

When nothing is priced in, the restricted objective equals the reduced one at
:math:`w` and :math:`a` is feasible for the reduced dual, so the working-set optimum is
the reduced problem's optimum (to HiGHS's tolerances). The loop starts from the working
sets it is given (along a path: the previous value's support and margin samples), and
rows and columns only join; a round that adds violators also adds the samples and zero
columns close to violating (:attr:`GenerationOptions.near_band`), which saves rounds.

Where the restricted LPs are solved:

* by default in a **live HiGHS model** (:class:`~.lp_warm.WarmRestrictedLP`), which the
  rounds grow by the columns and rows priced in and HiGHS's primal simplex re-solves
  from its last basis; along a path the engine hands each step the previous steps'
  model, so a new :math:`\lambda` changes costs, and the features and samples screened
  at the new value are held out by bounds and slack costs, not deleted;
* where scipy has no HiGHS bindings (before scipy 1.15, see :mod:`._highs_api`), by a
  cold ``scipy.optimize.linprog`` per round (HiGHS's dual simplex, or its interior point
  above :attr:`GenerationOptions.ipm_nnz` entries).

Tolerances:

* HiGHS's ``primal_feasibility_tolerance`` and ``dual_feasibility_tolerance`` start at
  :attr:`GenerationOptions.highs_tolerance` and are tightened tenfold (down to
  :attr:`GenerationOptions.highs_tightest`) when the certificate misses ``tol`` with
  nothing left to price;
* a feature or sample is priced in when it violates its condition by more than
  :attr:`GenerationOptions.price_rtol` (relative to :math:`\lambda n`, or to the
  margin 1): smaller violations are below what HiGHS resolves;
* ``tol`` is the target of the **full problem's relative duality gap**
  :math:`(P_\lambda(w)-D(a))/P_\lambda(w)`, with :math:`a` made dual feasible by scaling
  and both objectives bounded for rounding (:meth:`LPSVMData.certificate`): a returned
  pair with ``rel_gap <= tol`` is certified whatever HiGHS or the rules did.

The solver knows nothing of the rules: it is given the fixed sets, and
:meth:`ColumnRowGeneration.certify` reports the fixed variables that violate their
optimality condition at its answer, which :meth:`~ColumnRowGeneration.release` puts
back (the certify-and-repair loop of the engine drives the three methods).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from ..problems.lp_svm import LPCertificate, LPSVMData, l1_radius
from ._highs_api import highs_available
from .lp_warm import WarmRestrictedLP


@dataclass(frozen=True)
class GenerationOptions:
    r"""The tuning of :class:`ColumnRowGeneration`: HiGHS's tolerances and how much each
    round adds. They set the work (rounds, pivots), not what is certified: the answer is
    checked on the full problem's duality gap whatever they are.

    Attributes
    ----------
    highs_tolerance : float
        HiGHS's primal and dual feasibility tolerances of the first solves: tighter than
        HiGHS's defaults, since the restricted optimum becomes the pair whose full
        duality gap is certified against ``tol``.
    highs_tightest : float
        The tightest they are set to when the certificate asks for more: further down
        they approach the round-off of the LP's own arithmetic, where HiGHS's
        feasibility tests stop meaning anything.
    tighten_factor : float
        The factor of each tightening: one decade at a time, so that a re-solve asks
        no more accuracy than the certificate needs.
    price_rtol : float
        Relative violation below which pricing ignores a feature or a sample: smaller
        violations are below what HiGHS's tolerances resolve, and pricing them in
        would only add rounds.
    min_features_added : int
        Features priced in per round: at least this many (a quarter of it for a warm
        start's initial set), so that a small working set does not grow by a few
        columns a round, and at most as many as are working, so that it at most
        doubles and the LPs stay small.
    cold_start_features : int
        Features a cold start (no support, few priced) begins with: the most correlated
        ones, so that the first LP has columns to move.
    ipm_nnz : int
        Constraint-matrix entries above which a restricted LP goes to HiGHS's interior
        point method (with its crossover to a vertex) rather than its dual simplex (the
        cold ``linprog`` fallback only): the simplex's iterations grow with the rows
        and each costs a pass over the entries, while the interior point's iterations
        grow only slowly with the size, so it wins on large restricted LPs.
    near_band : float
        Distance from the margin 1 (and relative distance of a correlation below
        :math:`\lambda n`) within which a sample becomes a row, or a column joins, in a
        round that adds violators anyway: those are the next rounds' violators, cheaper
        to add now than in rounds of their own.
    row_band : float
        Default initial states from the start point's margins: rows within this
        distance of 1, linear below, out above. Wider than ``near_band``: a start point
        is further from the optimum than a round's iterate.
    """

    highs_tolerance: float = 1e-9
    highs_tightest: float = 1e-10
    tighten_factor: float = 0.1
    price_rtol: float = 1e-9
    min_features_added: int = 20
    cold_start_features: int = 5
    ipm_nnz: int = 300_000
    near_band: float = 0.05
    row_band: float = 0.2


#: The options every solve uses unless given others.
DEFAULT_OPTIONS = GenerationOptions()


@dataclass
class LPCheck:
    """The full problem's certificate at the solver's point, and the fixed variables
    that violate their optimality condition there (full-length masks): screened
    features with :math:`|Z_{:j}^\\top a|>\\lambda n`, samples fixed at 0 with margin
    below 1, samples fixed at the box with margin above 1. They are not proofs of a
    wrong rule (the point is only near-optimal) but what keeps the gap open."""

    certificate: LPCertificate
    features: np.ndarray
    samples: np.ndarray

    @property
    def n_violations(self) -> int:
        return int(self.features.sum() + self.samples.sum())


@dataclass
class LPResult:
    """What :func:`solve_lp_svm` returns: the point, its dual (feasible, full length,
    :math:`\\alpha=y\\circ a`), the full problem's certified objectives and gap, the
    generation rounds and HiGHS calls, whether ``tol`` was met, and the fixed variables
    released by the certificate (features, samples)."""

    w: np.ndarray
    alpha: np.ndarray
    primal: float
    dual: float
    gap: float
    rel_gap: float
    rounds: int
    n_lp: int
    converged: bool
    released: tuple[int, int]
    working_features: np.ndarray
    working_samples: np.ndarray


class ColumnRowGeneration:
    """Column-and-row generation on one reduced LP-SVM.

    Parameters
    ----------
    data : LPSVMData
    lam : float
    fixed_features : ndarray of bool, shape (d,), default=None
        Features held at 0 (proven :math:`w^*_j=0`).
    at_zero, at_box : ndarray of bool, shape (n,), default=None
        Samples held at :math:`a_i=0` (left out) and at :math:`a_i=s_i` (a linear term).
    features, samples : ndarray of bool, default=None
        The initial working features and rows (within the universe). Default: the
        support of ``w_start`` and the features most correlated with ``alpha_start``;
        the samples whose margin at ``w_start`` is within ``options.row_band`` of 1.
    linear : ndarray of bool, default=None
        The initial linear samples. Default: those with margin below
        ``1 - options.row_band`` at ``w_start`` (when ``samples`` is None; else none).
    w_start, alpha_start : ndarray, default=None
        A primal and a dual point (e.g. the previous value's solution); they give the
        default working sets and the bound :math:`\\|w^*\\|_1\\le P_\\lambda(w)/\\lambda`.
    model : WarmRestrictedLP or "new" or None, default="new"
        Where the restricted LPs are solved: a live HiGHS model kept by the caller
        (along a path: the previous steps' model, whose columns and rows join the
        working sets), ``"new"`` a model of this solve's own (when
        :func:`~._highs_api.highs_available`; else as None), None a cold
        ``linprog`` per round.
    options : GenerationOptions, default=DEFAULT_OPTIONS
        HiGHS's tolerances and the sizes of the rounds.
    """

    def __init__(self, data: LPSVMData, lam: float, fixed_features=None, at_zero=None,
                 at_box=None, features=None, samples=None, w_start=None, alpha_start=None,
                 linear=None, model="new", options: GenerationOptions = DEFAULT_OPTIONS):
        n, d = data.n_samples, data.n_features
        opt = self.options = options
        self.data, self.lam = data, float(lam)
        self.fixed_features = _mask(fixed_features, d)
        self.at_zero = _mask(at_zero, n)
        self.at_box = _mask(at_box, n) & ~self.at_zero
        w0 = np.zeros(d) if w_start is None else np.asarray(w_start, dtype=np.float64)
        a0 = data.alpha_at_zero() if alpha_start is None else alpha_start
        m0 = data.margins(w0)
        self.l1_bound = l1_radius(data.primal(lam, w0, m0), lam)
        corr = data.correlations(np.clip(data.y * a0, 0.0, data.s))
        if features is None:
            # the support, and the features the start's dual prices in (as the first
            # round would), ranked, at most half as many as the support (at least
            # min_features_added // 4; a cold start takes the cold_start_features most
            # correlated)
            features = w0 != 0.0
            limit = lam * data.n_samples * (1.0 + opt.price_rtol)
            priced = ~features & ~self.fixed_features & (np.abs(corr) > limit)
            keep = max(opt.min_features_added // 4, int(features.sum()) // 2)
            idx = np.flatnonzero(priced)
            idx = idx[np.argsort(-np.abs(corr[idx]), kind="stable")[:keep]]
            if not features.any() and len(idx) < opt.cold_start_features:
                free = np.flatnonzero(~self.fixed_features)
                idx = free[np.argsort(-np.abs(corr[free]),
                                      kind="stable")[:opt.cold_start_features]]
            features = features.copy()
            features[idx] = True
        if samples is None:
            samples = np.abs(m0 - 1.0) <= opt.row_band
            if linear is None:
                linear = m0 < 1.0 - opt.row_band
        features = _mask(features, d) & ~self.fixed_features
        # each working feature's allowed sign: that of the start's w where it is
        # non-zero, else that of the start's correlation (both where it is 0)
        sign = np.where(w0 != 0.0, np.sign(w0), np.sign(corr))
        self.plus = features & (sign >= 0.0)
        self.minus = features & (sign <= 0.0)
        if isinstance(model, str):
            model = new_model(data, opt) if model == "new" else None
        self.model = model
        if model is not None:
            # what the model already holds works again: its columns and rows are in
            # HiGHS's basis (a row whose sample is screened is held out by its slack)
            self.plus |= model.has_plus & ~self.fixed_features
            self.minus |= model.has_minus & ~self.fixed_features
            samples = _mask(samples, n) | model.has_row
        self.samples = _mask(samples, n) & self.free_samples
        self.linear = _mask(linear, n) & self.free_samples & ~self.samples
        self.tolerance = opt.highs_tolerance
        self.w = np.where(self.features, w0, 0.0)
        self.a = np.where(self.at_box | self.linear, data.s, 0.0)
        self.rounds = 0
        self.n_lp = 0
        self.released = [0, 0]
        #: whether the working-set LP must be solved (again): False once nothing is
        #: priced in, True after a release or a tightening
        self.stale = True

    @property
    def features(self) -> np.ndarray:
        """The working features (either sign)."""
        return self.plus | self.minus

    @property
    def free_samples(self) -> np.ndarray:
        return ~(self.at_zero | self.at_box)

    # -- the three steps the certify loop drives
    def solve(self, tol: float, max_iter: int) -> tuple[int, bool]:
        """Generate columns and rows until nothing is priced in (or ``max_iter`` LPs);
        ``tol`` is unused here (the reduced optimum is exact to HiGHS's tolerances) and
        kept for the engine's protocol. Returns ``(LPs solved, converged)``; nothing is
        solved when nothing changed since the last converged call."""
        if not self.stale:
            return 0, True
        data, lam, opt = self.data, self.lam, self.options
        n = data.n_samples
        limit = lam * n * (1.0 + opt.price_rtol)
        for it in range(max_iter):
            self._solve_working_set()
            m = data.margins(self.w)
            corr = data.correlations(self.a)
            free = self.free_samples & ~self.samples
            wrong_out = free & ~self.linear & (m < 1.0 - opt.price_rtol)
            wrong_linear = free & self.linear & (m > 1.0 + opt.price_rtol)
            # a column p_j (w_j > 0) prices in when Z_j^T a > lambda n, q_j when < -lambda n
            free_f = ~self.fixed_features
            cand_p = free_f & ~self.plus & (corr > limit)
            cand_m = free_f & ~self.minus & (corr < -limit)
            if not (wrong_out.any() or wrong_linear.any() or cand_p.any()
                    or cand_m.any()):
                self.stale = False
                return it + 1, True
            # with another LP to solve anyway, the samples and columns about to violate
            # join too (cheaper than the rounds they would cost later)
            near = np.abs(m - 1.0) <= opt.near_band
            new_s = wrong_out | wrong_linear | (free & near)
            self.samples |= new_s
            self.linear &= ~new_s
            near_limit = (1.0 - opt.near_band) * limit
            cand_p |= free_f & ~self.plus & (corr > near_limit) & (self.w == 0.0)
            cand_m |= free_f & ~self.minus & (corr < -near_limit) & (self.w == 0.0)
            idx = np.flatnonzero(cand_p | cand_m)
            if len(idx):
                keep = max(opt.min_features_added, int(self.features.sum()))
                if len(idx) > keep:
                    idx = idx[np.argsort(-np.abs(corr[idx]), kind="stable")[:keep]]
                self.plus[idx[cand_p[idx]]] = True
                self.minus[idx[cand_m[idx]]] = True
        return max_iter, False

    def certify(self) -> LPCheck:
        """The full problem's certificate at the current pair, and the fixed variables
        violating their condition there."""
        data, lam = self.data, self.lam
        cert = data.certificate(lam, self.w, data.y * self.a)
        m = cert.margins
        corr = np.abs(data.correlations(self.a))
        rtol = self.options.price_rtol
        feats = self.fixed_features & (corr > lam * data.n_samples * (1.0 + rtol))
        samples = (self.at_zero & (m < 1.0 - rtol)) \
            | (self.at_box & (m > 1.0 + rtol))
        return LPCheck(cert, feats, samples)

    def release(self, features: np.ndarray, samples: np.ndarray) -> None:
        """Free the fixed ``features`` and ``samples`` (full-length masks): they join the
        universe and the working sets."""
        features = features & self.fixed_features
        samples = samples & ~self.free_samples
        self.released[0] += int(features.sum())
        self.released[1] += int(samples.sum())
        self.fixed_features &= ~features
        self.plus |= features  # a released feature may take either sign
        self.minus |= features
        self.at_zero &= ~samples
        self.at_box &= ~samples
        self.samples |= samples
        self.a = np.where(self.at_box | self.linear, self.data.s,
                          np.where(self.samples, self.a, 0.0))
        if features.any() or samples.any():
            self.stale = True

    def tighten(self) -> bool:
        """Tighten HiGHS's tolerances tenfold; False when already at the tightest."""
        tightest = self.options.highs_tightest
        if self.tolerance <= tightest:
            return False
        self.tolerance = max(self.tolerance * self.options.tighten_factor, tightest)
        if self.model is not None:
            # the re-solve starts from the same basis factored afresh (when pivots have
            # updated the factor since it was last fresh): its duals are the accurate ones
            self.model.lp.refactor()
        self.stale = True
        return True

    # -- one restricted LP
    def _solve_working_set(self) -> None:
        data = self.data
        plus = np.flatnonzero(self.plus)
        minus = np.flatnonzero(self.minus)
        rows = np.flatnonzero(self.samples)
        self.rounds += 1
        if not len(plus) and not len(minus) and not len(rows):  # nothing to optimise
            self.w = np.zeros(data.n_features)
            self.a = np.where(self.at_box | self.linear, data.s, 0.0)
            return
        if self.model is not None:
            self.w, self.a = self.model.solve(self.lam, self.plus, self.minus,
                                              self.samples, self.at_box | self.linear,
                                              self.l1_bound, self.tolerance)
            self.n_lp += 1
            return
        lp = data.restricted_lp(self.lam, plus, minus, rows, self.at_box | self.linear,
                                self.l1_bound)
        options = {"primal_feasibility_tolerance": self.tolerance,
                   "dual_feasibility_tolerance": self.tolerance}
        nnz = 0 if lp.A_ub is None else lp.A_ub.nnz
        method = "highs-ipm" if nnz > self.options.ipm_nnz else "highs-ds"
        res = linprog(lp.c, A_ub=lp.A_ub, b_ub=lp.b_ub, bounds=lp.bounds, method=method,
                      options=options)
        self.n_lp += 1
        if res.status != 0 or res.x is None:
            raise RuntimeError(f"HiGHS failed on a restricted LP-SVM problem "
                               f"({len(rows)} rows, {len(plus) + len(minus)} columns): "
                               f"{res.message}")
        self.w = lp.weights(res.x, data.n_features)
        a = np.where(self.at_box | self.linear, data.s, 0.0)
        if len(rows):
            a[rows] = np.clip(-res.ineqlin.marginals, 0.0, data.s[rows])
        self.a = a


def solve_lp_svm(data: LPSVMData, lam: float, screen=None, w_start=None, alpha_start=None,
                 features=None, samples=None, tol: float = 1e-9, max_iter: int = 200,
                 options: GenerationOptions = DEFAULT_OPTIONS) -> LPResult:
    """Solve the LP-SVM at ``lam`` exactly: column-and-row generation on the problem
    reduced by ``screen`` (anything with boolean ``features``, ``at_zero``, ``at_box``;
    None: nothing fixed), certified on the full problem, fixed variables that violate
    their condition at the answer released and the solve resumed, HiGHS's tolerances
    tightened while the full relative gap exceeds ``tol``.

    A minimal certify-and-repair driver, for tests, benchmarks and callers without the
    engine; ``options`` tune the generation (:class:`GenerationOptions`).
    """
    task = ColumnRowGeneration(
        data, lam,
        fixed_features=None if screen is None else screen.features,
        at_zero=None if screen is None else screen.at_zero,
        at_box=None if screen is None else screen.at_box,
        features=features, samples=samples, w_start=w_start, alpha_start=alpha_start,
        options=options)
    used = 0
    while True:
        iters, _ = task.solve(tol, max(max_iter - used, 1))
        used += iters
        check = task.certify()
        cert = check.certificate
        if cert.rel_gap <= tol or used >= max_iter:
            break
        if check.n_violations:
            task.release(check.features, check.samples)
            continue
        if not task.tighten():
            break
    dp = cert.dual_point
    return LPResult(task.w.copy(), dp.alpha, cert.primal, cert.dual, cert.gap,
                    cert.rel_gap, task.rounds, task.n_lp, cert.rel_gap <= tol,
                    tuple(task.released), task.features.copy(), task.samples.copy())


def new_model(data: LPSVMData, options: GenerationOptions = DEFAULT_OPTIONS
              ) -> WarmRestrictedLP | None:
    """A live HiGHS model for ``data``'s restricted LPs, at ``options``' first
    tolerances, or None where this scipy has no HiGHS bindings (the solver then calls
    ``linprog``, cold, each round)."""
    if not highs_available():
        return None
    return WarmRestrictedLP(data, options.highs_tolerance)


def _mask(m, size) -> np.ndarray:
    if m is None:
        return np.zeros(size, dtype=bool)
    m = np.asarray(m, dtype=bool)
    if m.shape != (size,):
        raise ValueError(f"mask of shape {m.shape}, expected ({size},)")
    return m.copy()
