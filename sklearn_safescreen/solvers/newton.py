r"""Newton steps on the interior variables of a kernel box QP, with a kept factor.

Once coordinate descent has found which variables sit at a bound, one linear solve on
the others (the *interior* set :math:`I`: :math:`Q_{II}\,\delta = g_I`) usually finishes
the job, and exactly. :class:`NewtonCache` keeps the Cholesky factor of the last
interior block so that the next systems, whose interior sets usually differ by a few
variables, cost a few triangular solves (:func:`bordered_solve`) instead of a new
factorisation.

The factorisations and the solves run in tiles shared by the fit's OpenMP threads
(:mod:`._tiled_fast`), with the same factor and solutions, bit for bit, on any number of
threads.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgWarning

from .._utils.openmp import current_n_threads
from ..problems.box_qp import BoxQP
from ..problems.kernels import add_rows
from ._options import check_option_values
from ._tiled_fast import tiled_cho_solve, tiled_cholesky


@dataclass(frozen=True)
class NewtonOptions:
    """Tuning values of the Newton steps' kept factor (:class:`NewtonCache`), which the
    kernel solvers (:mod:`.dual_cd`, :mod:`.greedy_cd`) read from the cache they use.

    None of them changes what a solve converges to: a Newton step is judged by the gap
    check that follows it. Each attribute's description says why it has its value; the
    measurements behind them are in the section "Kernel SafeSVC profile" of
    doc/benchmarks.md.

    Attributes
    ----------
    max_system : int
        Kernel mode: largest interior set a Newton step factorises (a factor of
        ``8 * max_system**2`` bytes). Above it coordinate descent does the last decades
        of a solve alone, which on large interiors crawls, and a step on part of the
        set, the others held, can raise the objective at first; so the limit is as
        large as a fit's memory comfortably affords.
    keep_system : int
        Factors of at most this many variables are kept between the fits of a path
        (:meth:`NewtonCache.end_fit`), where a warm-started fit's interior set is mostly
        the last one's; larger ones serve the rounds of one fit only, so that a path
        does not hold a large factor between fits, except the walk of a search, whose
        estimator is discarded after it (:meth:`NewtonCache.end_fit`).
    update_fraction : float
        A Newton system whose interior set differs from the last factorised one by at
        most this fraction of its size is solved with that factor, bordered (k+1
        triangular solve pairs, 2 k m^2 flops, against m^3 / 3 for a new
        factorisation). The flop count alone would allow a larger k; but the bordered
        solves are level-2 BLAS, memory-bound, while a factorisation is level-3, and a
        larger fraction gained nothing in that profile.
    """

    max_system: int = 8000
    keep_system: int = 2500
    update_fraction: float = 0.05

    def __post_init__(self) -> None:
        check_option_values(self, at_least_one=("max_system",))


#: The options a :class:`NewtonCache` uses unless it is given others.
DEFAULT_OPTIONS = NewtonOptions()


class NewtonCache:
    """The Cholesky factor of the last interior block :math:`Q_{FF}` (global sample
    indices F) that a kernel-mode Newton step factorised, kept by the task's data across
    the working-set rounds of a solve and the fits of a warm-started path (Q depends on
    the kernel and the signs only, not on C).

    The next Newton systems' interior sets usually differ from F by a few variables
    (within a round the free variables barely change, and along a path they move
    gradually with C), so they cost a few triangular solves with
    this factor, bordered (:func:`bordered_solve`), instead of a new O(m^3)
    factorisation. A factor holds at most ``options.max_system`` squared doubles within
    a fit and ``options.keep_system`` squared between fits; not pickled (its options
    are).

    Parameters
    ----------
    options : NewtonOptions, optional
        The tuning values of the steps this cache serves; :data:`DEFAULT_OPTIONS` when
        None.
    """

    def __init__(self, options: NewtonOptions | None = None):
        self.options = DEFAULT_OPTIONS if options is None else options
        self.clear()
        #: the memory of the factor, reused by the next factorisations (a fresh block's
        #: first touch faults in every page of it, system time of the order of the
        #: factorisation's own arithmetic)
        self._workspace = None
        #: factors up to this many bytes are also kept between fits (the greedy solver
        #: sets it to the kernel cache's budget)
        self.keep_bytes = 0.0
        #: the greedy solver's kernel rows over its free samples
        #: (:class:`~sklearn_safescreen.solvers.greedy_cd.RowCache`), kept like the factor
        self.rows = None
        #: the dense solver's signed kernel block over its free samples
        #: (:meth:`signed_block`), kept like the factor
        self.block = None

    def clear(self) -> None:
        self.idx = None
        self.factor = None

    def end_fit(self, keep: bool, walk: bool = False) -> None:
        """After a fit: keep the factor for the next fit of a path only if ``keep`` and
        it is small (``options.keep_system``, or within the kernel cache's budget
        ``keep_bytes``), or if the fits are one walk's (``walk``: a search's walker
        discards the estimator after its walk, so the factor, the memory the fits
        needed anyway, is not held by a model a user keeps; the next fit's free set
        is mostly this one's, and its steps are then bordered solves)."""
        large = self.idx is not None and self.idx.size > self.options.keep_system \
            and 8.0 * self.idx.size**2 > self.keep_bytes and not walk
        if not keep or large:
            self.clear()
            self._workspace = None
        if not keep:
            self.rows = None
            self.block = None

    def __getstate__(self):
        return {"options": self.options}

    def __setstate__(self, state):
        self.options = state.get("options", DEFAULT_OPTIONS)
        self.clear()
        self.rows = None
        self.block = None
        self._workspace = None

    def signed_block(self, problem: BoxQP, free: np.ndarray) -> np.ndarray:
        """``Q_FF`` over the sorted samples ``free`` (:func:`signed_block`), read-only:
        the one kept from the last solve when it is of the same kernel, samples and
        signs. Along a path whose fits screen nothing (small problems whose kernel the
        cache holds whole) every fit's solve would otherwise gather the same block
        again; it does not depend on C. Blocks of at most ``options.keep_system``
        samples are kept, as factors are."""
        kept, sign = self.block, problem.sign[free]
        if (kept is not None and kept[0] is problem.kernel and np.array_equal(kept[1], free)
                and np.array_equal(kept[2], sign)):
            return kept[3]
        Q = signed_block(problem, free, free)
        Q.flags.writeable = False  # shared by the next solves: no solve may write it
        self.block = ((problem.kernel, free.copy(), sign, Q)
                      if free.size <= self.options.keep_system else None)
        return Q

    def solve(self, problem: BoxQP, Q: np.ndarray, free: np.ndarray, interior: np.ndarray,
              rhs: np.ndarray) -> np.ndarray:
        """``Q_II^{-1} rhs`` for the local indices ``interior`` of the block ``Q`` of the
        samples ``free`` (both sorted); may raise ``LinAlgError`` / ``ValueError``."""
        idx = free[interior]
        if self.idx is not None:
            in_new = np.isin(self.idx, idx, assume_unique=True)
            added = idx[~np.isin(idx, self.idx, assume_unique=True)]
            if ((~in_new).sum() + added.size
                    <= self.options.update_fraction * self.idx.size):
                step = bordered_solve(problem, self.idx, self.factor, ~in_new, added,
                                       idx, rhs)
                if step is not None:
                    return step
        self.clear()
        self.factor = cholesky_factor(self._block(Q, interior))
        self.idx = idx
        return cholesky_solve(self.factor, rhs)


    def _block(self, Q, interior: np.ndarray) -> np.ndarray:
        """``Q_II``, for an in-place factorisation: in the kept workspace when ``Q``
        can write into it (then as its transpose, Fortran-ordered, which LAPACK
        factorises without a copy; ``Q_II`` is symmetric), else a new array."""
        k = interior.size
        if not hasattr(Q, "gather_into"):
            return Q[np.ix_(interior, interior)]
        if self._workspace is None or self._workspace.size < k * k:
            # room for the larger systems that usually follow (untouched, it costs
            # no memory)
            self._workspace = np.empty(max(k * k, min((3 * k // 2) ** 2,
                                                      self.options.max_system ** 2)))
        out = self._workspace[:k * k].reshape(k, k)
        return Q.gather_into(out, interior, interior).T


def newton_options(problem: BoxQP) -> NewtonOptions:
    """The Newton options of ``problem``'s kept :class:`NewtonCache`, or
    :data:`DEFAULT_OPTIONS` when it keeps none (its steps then use a fresh cache)."""
    return problem.newton.options if problem.newton is not None else DEFAULT_OPTIONS


def cholesky_factor(block: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of the symmetric ``block`` (its lower triangle read),
    in place when it is column-major (Fortran-ordered), in tiles on the fit's threads;
    raises ``LinAlgError`` when it is not positive definite."""
    A = block if block.flags.f_contiguous else np.asfortranarray(block)
    info = tiled_cholesky(A, current_n_threads())
    if info:
        raise np.linalg.LinAlgError(
            f"the leading minor of order {info} is not positive definite")
    return A


def cholesky_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``(L L^T)^{-1} rhs`` (a new array; ``rhs`` one or several columns) with the
    factor ``L`` of :func:`cholesky_factor`."""
    B = np.array(rhs, dtype=np.float64, order="F", copy=True)
    tiled_cho_solve(factor, B.reshape(B.shape[0], -1, order="F"), current_n_threads())
    return B


def signed_block(problem: BoxQP, rows, cols) -> np.ndarray:
    r""":math:`Q_{RC}=s_Rs_C^\top\circ K_{RC}` from the kernel (a fresh array)."""
    block = problem.kernel.block(rows, cols)
    block *= problem.sign[rows][:, None]
    block *= problem.sign[cols][None, :]
    return block


def bordered_solve(problem, F, factor, removed, A, idx, rhs):
    r"""Solve :math:`Q_{I'I'}x=b` for :math:`I'=(F\setminus R)\cup A` (sorted global
    indices ``idx``) with the factor of :math:`Q_{FF}`: the variables R (mask
    ``removed`` over F) are held at zero by multipliers :math:`\mu`, the added ones A
    border the system,

    .. math::

        \begin{pmatrix}Q_{FF}&Q_{FA}&E_R\\Q_{AF}&Q_{AA}&0\\E_R^\top&0&0\end{pmatrix}
        \begin{pmatrix}x_F\\x_A\\\mu\end{pmatrix}=
        \begin{pmatrix}\tilde b_F\\b_A\\0\end{pmatrix},

    eliminated through :math:`W=Q_{FF}^{-1}B`, :math:`B=(Q_{FA}\ E_R)`: the k x k
    system :math:`(\mathrm{diag}(Q_{AA},0)-B^\top W)z=(b_A-Q_{AF}y_0,\ -y_{0,R})`,
    :math:`y_0=Q_{FF}^{-1}\tilde b_F`, then :math:`x_F=y_0-Wz`. Cost: k+1 pairs of
    triangular solves and k (|F| + k) kernel values. Returns ``x`` in the order of
    ``idx``, or None if the small system is singular."""
    pos_R = np.flatnonzero(removed)
    n_A, k = A.size, A.size + pos_R.size
    kept = ~removed
    at = np.searchsorted(idx, F[kept])  # rows of the answer of F's kept variables
    # y0 and W = Q_FF^{-1} B in one solve with k + 1 right-hand sides: the factor is
    # read once (the triangular solves are bound by reading the factor from memory, so
    # k + 1 right-hand sides together cost little more than one)
    Bb = np.zeros((F.size, k + 1), order="F")
    Bb[kept, 0] = rhs[at]
    if n_A:
        Bb[:, 1:n_A + 1] = signed_block(problem, F, A)
    Bb[pos_R, 1 + n_A + np.arange(pos_R.size)] = 1.0
    sol = cholesky_solve(factor, Bb)
    y0 = sol[:, 0]
    if k == 0:  # the factorised set itself
        return y0
    B, W = Bb[:, 1:], sol[:, 1:]
    S = -(B.T @ W)
    at_A = np.searchsorted(idx, A)
    r = np.concatenate([rhs[at_A] - B[:, :n_A].T @ y0, -y0[pos_R]])
    if n_A:
        S[:n_A, :n_A] += signed_block(problem, A, A)
    try:
        z = np.linalg.solve(S, r)
    except np.linalg.LinAlgError:
        return None
    x = np.empty(idx.size)
    x[at] = (y0 - W @ z)[kept]
    x[at_A] = z[:n_A]
    return x if np.all(np.isfinite(x)) else None


def fixing_newton_step(problem, keeper: NewtonCache, Q, index: np.ndarray, a, g, lo, hi,
                       interior: np.ndarray, fix_rounds: int,
                       add_rows_to) -> tuple[float, bool] | None:
    """A Newton step on the positions ``interior`` (the others held), with the
    variables it would carry out of their box fixed at the bound they cross; ``a`` and
    ``g`` updated in place. Returns ``(change of the objective, whether the full step
    was kept)``, or None when a system is singular (nothing changed).

    ``Q`` is the block over the samples ``index`` (``Q[np.ix_(i, j)]`` over positions),
    ``interior`` positions in it with ``index[interior]`` sorted; ``add_rows_to(out,
    positions, delta)`` adds ``delta @ Q[positions]`` to ``out`` (the gradient over
    every position).

    Round r solves ``Q_II step = g_I + Q_IO delta_O`` over the interior variables
    ``I`` left, where ``O`` holds those fixed in the earlier rounds and ``delta_O``
    their move to the bound; the variables the step carries out of their box join
    ``O``, at most ``fix_rounds`` rounds. On an ill-conditioned problem (a large C, a
    nearly linear kernel) the variables that must leave the interior set overshoot
    far, and one clipped step misplaces the others: fixing them and solving again
    is the active-set step of the path's homotopy, taken for many breakpoints at
    once. The rounds' systems differ by the fixed variables only, solved with the
    kept factor bordered.

    A clipped step can still raise the objective (the fixed set is a guess): the
    move is then scaled by the exact minimiser of the quadratic along it, so that a
    step never undoes the descent before it."""
    a_I = a[interior]
    lo_I, hi_I = lo[interior], hi[interior]
    left = np.ones(interior.size, dtype=bool)  # not yet fixed at a bound
    target = a_I.copy()
    rhs = g[interior].copy()
    for round_ in range(max(fix_rounds, 1)):
        try:
            with warnings.catch_warnings():
                # an ill-conditioned step is harmless: the gap check judges its result
                warnings.simplefilter("ignore", LinAlgWarning)
                step = keeper.solve(problem, Q, index, interior[left], rhs[left])
        except (np.linalg.LinAlgError, ValueError):
            return None
        if not np.all(np.isfinite(step)):
            return None
        target[left] = a_I[left] - step
        out = np.zeros(interior.size, dtype=bool)
        out[left] = (target[left] < lo_I[left]) | (target[left] > hi_I[left])
        if not out.any() or round_ == fix_rounds - 1 or out.sum() == left.sum():
            break
        # fix them at the bound they cross; the others' system gains their move
        crossed = np.clip(target[out], lo_I[out], hi_I[out])
        move = crossed - a_I[out]
        target[out] = crossed
        left &= ~out
        rhs[left] += move @ Q[np.ix_(interior[out], interior[left])]
    new = np.clip(target, lo_I, hi_I)
    delta = new - a_I
    change = delta != 0.0
    if not change.any():
        return 0.0, True
    moved, d = interior[change], delta[change]
    g_before = g.copy()
    add_rows_to(g, moved, d)
    slope = float(d @ g_before[moved])  # derivative of the objective along d
    curvature = float(d @ (g[moved] - g_before[moved]))  # d'Qd
    full = slope + 0.5 * curvature
    if full <= 0.0 or not curvature > 0.0:
        a[moved] = new[change]
        return full, True
    # the exact minimiser of slope t + curvature t^2 / 2 over [0, 1], and the
    # gradient brought to it from the two ends (no row read again)
    t = min(max(-slope / curvature, 0.0), 1.0)
    g -= g_before
    g *= t
    g += g_before
    a[moved] = np.clip(a[moved] + t * d, lo[moved], hi[moved])
    return t * slope + 0.5 * t * t * curvature, False


def newton_on_interior(problem, Q, free, a, g, lo, hi, interior,
                        cache: NewtonCache) -> bool:
    """Newton step on the interior variables with the others held: solve
    ``Q_II step = g_I`` (gradient zero on I), clip to the box, update ``g`` in place.
    Returns False when the system is numerically singular (nothing changed)."""
    try:
        with warnings.catch_warnings():
            # an ill-conditioned step is harmless: the gap check judges its result
            warnings.simplefilter("ignore", LinAlgWarning)
            step = cache.solve(problem, Q, free, interior, g[interior])
    except (np.linalg.LinAlgError, ValueError):
        return False
    if not np.all(np.isfinite(step)):
        return False
    new = np.clip(a[interior] - step, lo[interior], hi[interior])
    add_rows(g, Q, interior, new - a[interior])
    a[interior] = new
    return True

