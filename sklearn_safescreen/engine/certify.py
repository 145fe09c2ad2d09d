"""The certificate: every fit's answer is checked on the full problem, and repaired.

One loop serves every estimator family. A family supplies a :class:`ReducedSolve`: how
to solve its reduced problem (the variables fixed by screening held), how to certify
the result on the **full** problem, and how to release fixed variables. The loop

1. solves the reduced problem to the inner tolerance;
2. certifies: the full duality gap, and which fixed variables the gap ball of the
   reduced solution *proves* wrong;
3. if some are proven wrong, a rule was unsafe: warn (:class:`ScreeningRepairWarning`),
   release them, **stop dynamic screening for the rest of the fit** and solve again.
   Dynamic screening fixes variables with the gap ball of the *reduced* problem, which
   contains the full optimum only if every earlier decision was right: once one is
   proven wrong, that premise is gone, so the re-solves fix nothing new and a released
   variable stays free;
4. if the full gap meets ``tol`` (or the solver ran out of iterations), stop;
5. otherwise tighten the inner tolerance (the reduced optimum is the full one only
   within the reduced solution's ball) and, after a few attempts, release the fixed
   variables that keep the full gap open, without a proof of a wrong decision (so no
   warning);
6. when either budget is spent (``MAX_REPAIRS`` proven repairs, ``CERTIFY_ATTEMPTS``
   tightenings) with variables still fixed, **fall back to the unscreened solve**:
   release every fixed variable and solve the full problem without screening.

The answer is then a certified point of the full problem whatever the rules did, or,
when even the unscreened solve cannot certify it (its iterations or float64 ran out),
exactly what the unscreened solve returns, with the warning the caller issues for
that (``doc/theory/safety.rst``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .._utils.warnings import ScreeningRepairWarning, warn_user

#: Reduced solves, each with a 10x tighter inner tolerance, before the fixed variables
#: that keep the full gap open are released (and, one attempt later, every fixed one).
CERTIFY_ATTEMPTS = 4
#: Rounds of proven repairs before every fixed variable is released (a rule proven wrong
#: twice in one fit is not trusted with the rest of its decisions).
MAX_REPAIRS = 2


@dataclass
class Certificate:
    """The full problem's verdict on a reduced solution.

    ``wrong`` and ``loose`` are whatever the family's :meth:`ReducedSolve.release`
    accepts (e.g. boolean masks over the variables), with their counts: ``wrong`` the
    fixed variables proven on the wrong side by the gap ball, ``loose`` those that keep
    the full gap open without such a proof.
    """

    gap: float
    rel_gap: float
    wrong: object = None
    n_wrong: int = 0
    loose: object = None
    n_loose: int = 0


class ReducedSolve(Protocol):
    """A family's reduced problem, as the certify loop drives it."""

    def solve(self, tol: float, max_iter: int) -> tuple[int, bool]:
        """Solve the reduced problem to relative gap ``tol`` within ``max_iter``
        iterations, from the current point; return ``(iterations, converged)``."""

    def certify(self) -> Certificate:
        """The full problem's gap at the current point, and the fixed variables that are
        proven wrong or keep that gap open."""

    def release(self, which: object, proven: bool) -> None:
        """Free the fixed variables ``which`` (a :attr:`Certificate.wrong` or ``loose``)
        and record it (a repair event when ``proven``)."""

    def stop_dynamic_screening(self) -> None:
        """Fix no further variable in the later solves of this fit."""

    def release_all(self) -> None:
        """Free every fixed variable (the fall-back to the unscreened solve)."""

    @property
    def rules(self) -> str:
        """The rules whose decisions the certificate checks, as a repair warning names
        them (e.g. ``"IT and the dynamic gap balls"``)."""


@dataclass
class CertifiedResult:
    """What :func:`certified_solve` returns."""

    certificate: Certificate
    n_iter: int
    converged: bool  # the full relative gap met ``tol``
    #: proven repairs made (each a :class:`ScreeningRepairWarning`)
    n_repairs: int = 0
    #: whether the answer comes from the unscreened fall-back solve
    unscreened: bool = False


def certified_solve(task: ReducedSolve, *, tol: float, max_iter: int,
                    describe: str) -> CertifiedResult:
    """Solve ``task``'s reduced problem until its answer is certified on the full problem
    (see the module docstring). ``describe`` names the value being solved in the
    warning a repair issues (e.g. ``"SafeSVC at C=0.1"``).

    A solve that stops at ``max_iter`` ends the loop: ``converged`` is then False and
    the caller decides how to warn (a path's internal step need not).
    """
    inner_tol, n_iter = tol, 0
    tightenings = repairs = 0
    while True:
        iters, solver_converged = task.solve(inner_tol, max(max_iter - n_iter, 1))
        n_iter += iters
        cert = task.certify()
        out_of_iterations = not solver_converged or n_iter >= max_iter
        if cert.n_wrong:
            repairs += 1
            warn_user(
                f"certificate: {cert.n_wrong} variable(s) screened by "
                f"{getattr(task, 'rules', 'the rules')} violate their optimality condition "
                f"({describe}); they were put back and the problem re-solved without "
                "further screening in this fit. Please report this (a rule was unsafe).",
                ScreeningRepairWarning)
            task.release(cert.wrong, proven=True)
            task.stop_dynamic_screening()
            if out_of_iterations:  # the caller warns that the fit did not converge
                return CertifiedResult(cert, n_iter, False, repairs)
            if repairs >= MAX_REPAIRS:
                break
            continue
        if cert.rel_gap <= tol or out_of_iterations:
            return CertifiedResult(cert, n_iter, cert.rel_gap <= tol, repairs)
        if tightenings >= CERTIFY_ATTEMPTS:
            if not cert.n_loose and not repairs:
                # no fixed variable keeps the gap open and no rule was proven wrong: the
                # gap is the solver's (or float64's), as it would be without screening
                return CertifiedResult(cert, n_iter, False, repairs)
            break
        if tightenings == CERTIFY_ATTEMPTS - 1 and cert.n_loose:
            # the reduced optimum is certified only up to its ball: release what keeps
            # the full gap open (no proof of a wrong decision, so no warning)
            task.release(cert.loose, proven=False)
        inner_tol *= 0.1
        tightenings += 1
    # the fall-back: the full problem, nothing fixed, no dynamic screening
    task.release_all()
    task.stop_dynamic_screening()
    iters, _ = task.solve(tol, max(max_iter - n_iter, 1))
    n_iter += iters
    cert = task.certify()
    return CertifiedResult(cert, n_iter, cert.rel_gap <= tol, repairs, unscreened=True)
