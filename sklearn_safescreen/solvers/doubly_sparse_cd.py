r"""Coordinate descent for the reduced doubly sparse problem, with Anderson extrapolation.

Cyclic proximal coordinate descent on the primal (the compiled epochs of
:mod:`._doubly_sparse_fast`): each coordinate minimises the objective's quadratic upper
bound with the coordinate smoothness :math:`L_j = \sum_{i} c_iX_{ij}^2/(\gamma n)` over
the **undecided rows** only, so sample screening both removes work and lengthens the
steps (the samples it fixes are exactly those whose loss is flat or linear near the
optimum, where :math:`L_j` over-estimates the curvature). Every few epochs the last
iterates are extrapolated (Anderson acceleration, as in Bertrand & Massias 2021) and
the extrapolation kept when it lowers the objective; the duality gap of
:math:`(w, \alpha(w))` is computed on fresh margins at each check and is what the solve
stops on.

The solver knows nothing about screening: it solves the
:class:`~sklearn_safescreen.problems.doubly_sparse.ReducedProblem` it is given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..problems.doubly_sparse import Gap, ReducedProblem
from ._doubly_sparse_fast import dual_from_margins, epoch_csc, epoch_dense
from ._options import check_option_values


@dataclass(frozen=True)
class DoublySparseCDOptions:
    """Tuning values of :func:`coordinate_descent`.

    None of them changes what a solve converges to: only exact duality gaps end it.
    Each attribute's description says why it has its value.

    Attributes
    ----------
    check_every : int
        Epochs between two duality-gap evaluations (each costs about two epochs): the
        checks then take about a third of the work, and a solve stops at most this
        many epochs after reaching its tolerance.
    anderson_depth : int
        Iterates combined by one Anderson extrapolation: a few keep the stored iterates
        and the small least-squares system cheap; an extrapolation is kept only when it
        lowers the objective, so the depth changes the speed, never the answer.
    """

    check_every: int = 4
    anderson_depth: int = 3

    def __post_init__(self) -> None:
        check_option_values(self, at_least_one=("check_every", "anderson_depth"))


#: The options a solve uses unless it is given others.
DEFAULT_OPTIONS = DoublySparseCDOptions()


@dataclass
class CDResult:
    """The end of a reduced solve: the point, its margins (kept up to date by the
    epochs, not recomputed) and the gap they give, the epochs run and whether the gap
    reached the target."""

    u: np.ndarray
    t: np.ndarray
    gap: Gap
    epochs: int
    converged: bool
    history: list  # the last iterates, for the next solve's extrapolation


def coordinate_descent(red: ReducedProblem, u: np.ndarray, lam: float, beta: float,
                       target: float, max_epochs: int, order: np.ndarray,
                       anderson: bool = True, history: list | None = None,
                       options: DoublySparseCDOptions | None = None) -> CDResult:
    """Minimise the reduced primal from ``u`` until its duality gap is at most ``target``
    (absolute) or ``max_epochs`` epochs have run.

    ``order`` is the visiting order of the columns (a permutation of
    ``range(red.n_cols)``), kept fixed across epochs so that the epochs are one map
    that the extrapolation can accelerate. ``history`` holds iterates of an earlier
    solve restricted to these columns (dynamic screening cuts a solve into several),
    so that the extrapolation need not wait for new ones.

    The exact gap costs a pass over the data; after each epoch the gap is *estimated*
    for free from the correlations :math:`X_{:j}^\\top\\alpha` the epoch computed
    anyway (each as of its column's visit), and the exact gap is computed when the
    estimate reaches the target or every ``options.check_every`` epochs. Only exact
    gaps end a solve. ``options`` (:class:`DoublySparseCDOptions`) holds the tuning
    values, :data:`DEFAULT_OPTIONS` when None.
    """
    options = DEFAULT_OPTIONS if options is None else options
    depth = options.anderson_depth
    data = red.data
    u = np.array(u, dtype=np.float64)
    t = red.margins(u)
    if red.n_cols == 0 or max_epochs <= 0:
        gap = red.gap(u, t, lam, beta)
        return CDResult(u, t, gap, 0, gap.gap <= target, list(history or []))
    y, c = red.y, red.weights
    alpha = np.empty(red.n_rows)
    dual_from_margins(t, y, c, alpha, data.hinge, data.gamma, data.epsilon)
    lips = red.col_sq_c / (data.gamma * data.n_samples)
    corr = np.zeros(red.n_cols)
    order = np.ascontiguousarray(order, dtype=np.int64)
    args = (y, c, u, t, alpha, red.offset, lips, order, lam, beta, data.gamma,
            data.epsilon, data.hinge, 1.0 / data.n_samples, corr)
    if red.sparse:
        X = red.X

        def epoch():
            return epoch_csc(X.data, X.indices, X.indptr, *args)
    else:

        def epoch():
            return epoch_dense(red.X, *args)

    history = list(history or [])
    epochs = 0
    gap = None
    converged = False
    while epochs < max_epochs:
        epoch()
        epochs += 1
        if anderson:
            history.append(u.copy())
        due = epochs % options.check_every == 0 or epochs == max_epochs
        if not due and red.estimated_gap(u, t, alpha, corr, lam, beta) > target:
            continue
        if anderson and len(history) > depth:
            better = _extrapolate(red, history[-depth - 1:], u, t, lam, beta)
            if better is not None:
                u[:], t[:] = better
                dual_from_margins(t, y, c, alpha, data.hinge, data.gamma, data.epsilon)
            history.clear()
        # the margins kept by the epochs carry their accumulated round-off: good enough
        # to decide when to stop, while the caller recomputes them before any screening
        # and the certificate recomputes everything on the full problem
        gap = red.gap(u, t, lam, beta, alpha)
        if gap.gap <= target:
            converged = True
            break
    return CDResult(u, t, gap, epochs, converged, history[-depth - 1:])


def _extrapolate(red, iterates, u, t, lam, beta):
    """Anderson extrapolation of the last iterates; returned only if it lowers the
    objective."""
    W = np.asarray(iterates)
    R = np.diff(W, axis=0)
    gram = R @ R.T
    scale = np.trace(gram)
    if not np.isfinite(scale) or scale == 0.0:
        return None
    try:
        z = np.linalg.solve(gram + 1e-10 * scale * np.eye(len(gram)), np.ones(len(gram)))
    except np.linalg.LinAlgError:
        return None
    if not np.isfinite(z).all() or z.sum() == 0.0:
        return None
    candidate = (z / z.sum()) @ W[1:]
    t_candidate = red.margins(candidate)
    if red.primal(candidate, t_candidate, lam, beta) < red.primal(u, t, lam, beta):
        return candidate, t_candidate
    return None

