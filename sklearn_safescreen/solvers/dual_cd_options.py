"""The tuning values of box-QP dual coordinate descent (:mod:`.dual_cd`) in one object.

None of them changes what a solve converges to: the solver stops on the same duality
gap whatever they are, and the caller certifies every answer on the full problem. They
choose how it gets there: when coordinate descent hands a solve to the interior-point
finisher, how exactly that finishes it, and when Newton steps on the interior variables
are tried. Two solves with the same options and inputs make the same updates.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._options import check_option_values


@dataclass(frozen=True)
class DualCDOptions:
    """Tuning values of :func:`~.dual_cd.solve_box_qp` (both modes).

    Each attribute's description says why it has its value; the measurements behind
    the values that cite one are in the named section of doc/benchmarks.md (git has
    the runs).

    Attributes
    ----------
    ipm_after_epochs : int
        Epochs of coordinate descent after which a still-unconverged solve is finished
        by the interior-point method (when its Newton systems are small enough): CD's
        linear rate, on which the hand-over is decided, is only measurable once its
        first, fast epochs are behind it.
    ipm_epochs_per_feature : int
        Linear mode: CD hands over to the interior-point method when, at its measured
        linear rate, it would still need more than this many epochs per feature.
        Counting flops, a few tens of Newton steps of O(n d^2) against O(n d) per epoch
        would put the hand-over at a few tens of epochs per feature; but the Newton
        steps' flops are level-3 BLAS, each far cheaper than a flop of CD's dependent
        scalar updates, so handing over early pays, above all at large C where CD's
        rate is slowest.
    ipm_max_finishes : int
        Linear mode: interior-point finishes per solve, at most; one more is tried when
        CD is slow again after a finish, unless the last one did not improve the gap
        (then the finisher has reached round-off and the solve stops at its best point).
    ipm_max_system : int
        Largest Newton system the finisher forms: d+1 (linear mode) or the free-set
        size (kernel mode). Its matrix takes ``8 m^2`` bytes and its factorisation
        ``m^3 / 3`` flops per Newton step, which this bound keeps small beside a fit.
    ipm_small_flops : float
        Problems whose Newton system costs at most this many flops are always finished
        by the interior-point method, so small fits are exact to ~1e-12 whatever
        ``tol``: at that size a finish costs little in absolute terms, and an exact
        solution is the tightest screening reference for the next step.
    cd_near_tol : float
        ... and those that screening made that small while CD's gap exceeds this many
        times ``tol`` (:func:`~.dual_cd._polish`): far from ``tol`` CD still needs many
        epochs and the finisher is the short way, while within a small factor of it one
        or two epochs are cheaper than a finish (doc/benchmarks.md, "Screening on
        against off").
    screened_polish_width : float
        ... and whose active variables times the features are at most this many times
        the samples: the finisher's run (a few tens of Newton steps, each about ``d``
        epochs over the active variables, in level-3 BLAS, several times cheaper a flop)
        then costs some tens of epochs of the unscreened problem, which CD far from
        ``tol`` would exceed; much wider, CD's remaining epochs cost less (a problem of
        a few hundred samples and tens of features, such as a one-vs-one pair, where
        the finisher's steps cost tens of its epochs each). At the sizes where
        screening pays, ``ipm_small_flops`` binds first.
    ipm_tol : float
        Relative gap the finisher aims at: far below ``tol``, because the solution is
        the next screening reference and the gap inflation of an inexact reference
        grows with the square root of the absolute gap.
    kernel_ipm_epochs_per_variable : int
        Kernel mode: the interior-point finisher starts after this many epochs per free
        variable: a LAPACK factorisation of n variables (n^3/3 flops of level-3 BLAS)
        costs far less than n/3 compiled CD epochs (n^2 flops each, of dependent scalar
        updates), so waiting longer only lets hard problems crawl.
    ipm_working_set_share : float
        Kernel mode: the interior-point finisher first runs on the variables CD has not
        settled at a bound when they are at most this share of the active ones: below
        it the working set's factorisations cost a fraction of the full ones, and a
        round that brings held variables back costs little.
    ipm_working_set_rounds : int
        ... in at most this many rounds, each bringing back the held variables that
        violate their optimality condition at its answer; then over all of them.
    stop_when_slow_min : int
        ``stop_when_slow`` returns only when more variables than this are undecided
        (fewer: the interior-point finisher is cheap).
    newton_after_epochs : int
        Kernel mode: epochs after which a Newton step on the interior variables is
        tried (each time the interior set changes): a few epochs first settle which
        variables are interior, so that the step is taken on a set likely to hold.
    kernel_newton_flops : float
        ... and, on a small problem, once the epochs have cost this many multiply-adds
        (``n**2`` an epoch over ``n`` variables): a step's factorisation is cheap there,
        but its run of calls costs about this much whatever the size, while coordinate
        descent on a few hundred variables often converges in fewer epochs (a step
        tried at once would then be wasted). Problems the finisher polishes at once
        (``ipm_small_flops``) take their step at once.
    newton_max_steps : int
        Kernel mode: Newton steps per solve, at most: with clipping, the interior set
        could otherwise cycle.
    newton_steps_before_ipm : int
        ... and at most this many while the interior-point finisher may still run: on
        its working set of the variables CD has not settled it is the cheaper way to
        the end, while clipped Newton steps, each followed by up to a doubling of the
        epochs, shrink the interior set a few variables at a time on ill-conditioned
        kernels (a nearly linear RBF at large C). One step is kept: from a cold start
        its jump settles most bounds, after which CD's rate tells the finisher's
        hand-over early.
    check_max_epochs : int
        Most epochs between two gap checks. The checks' spacing doubles (1, 1, 2, 4,
        ...) so that dynamic screening acts early and checking costs O(log epochs); the
        cap keeps a slow solve checking its gap, and screening, at regular intervals.
    kernel_check_flops : float
        Kernel mode: the gap checks are spaced by at least the epochs whose kernel-row
        updates reach this many multiply-adds (``n**2`` an epoch over ``n`` active
        variables): a check is a fixed run of vector operations, whose cost does not
        shrink with the problem, so on a small problem (a one-vs-one pair of a few
        hundred samples) checking after each of the first epochs (the schedule above)
        costs more than the epochs; coordinate descent's projected-gradient test still
        ends a call early once its tolerance is met.
    pg_tol_start : float
        The projected-gradient tolerance of CD's first call (LIBLINEAR's stopping
        criterion): loose, because the duality gap, not this, decides convergence; a
        call that stops on it early costs only a gap check.
    pg_tol_shrink : float
        The factor that tolerance is multiplied by each time a call stops on it while
        the gap is still above ``tol``: one decade a time, as LIBLINEAR shrinks it.
    ipm_max_iter : int
        Iterations of one compiled interior-point finish: a Mehrotra run on these small
        systems converges in a few tens, so the cap only ends a run that round-off has
        stalled (its best iterate is kept).
    ipm_tol_factor : float
        A finish aims at this fraction of ``tol`` (or at ``ipm_tol`` if that is smaller):
        the certificate recomputes the gap on the full problem with its own rounding,
        and the margin keeps a finished solve from missing ``tol`` there.
    """

    ipm_after_epochs: int = 10
    ipm_epochs_per_feature: int = 2
    ipm_max_finishes: int = 8
    ipm_max_system: int = 2500
    ipm_small_flops: float = 1e6
    cd_near_tol: float = 10.0
    screened_polish_width: float = 4.0
    ipm_tol: float = 1e-12
    kernel_ipm_epochs_per_variable: int = 1
    ipm_working_set_share: float = 0.5
    ipm_working_set_rounds: int = 3
    stop_when_slow_min: int = 2000
    newton_after_epochs: int = 5
    kernel_newton_flops: float = 1.5e6
    newton_max_steps: int = 10
    newton_steps_before_ipm: int = 1
    check_max_epochs: int = 500
    kernel_check_flops: float = 1e6
    pg_tol_start: float = 0.1
    pg_tol_shrink: float = 0.1
    ipm_max_iter: int = 80
    ipm_tol_factor: float = 0.01

    def __post_init__(self) -> None:
        check_option_values(self)


#: The options a solve uses unless it is given others.
DEFAULT_OPTIONS = DualCDOptions()
