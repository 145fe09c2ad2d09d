"""The certificate: every fit's answer is checked on the full problem, and repaired.

One loop serves every estimator family. A family supplies a :class:`ReducedSolve`: how
to solve its reduced problem (the variables fixed by screening held), how to certify
the result on the **full** problem, and how to release fixed variables. The loop

1. solves the reduced problem to the inner tolerance;
2. certifies: the full duality gap, and which fixed variables the gap ball of the
   reduced solution *proves* wrong;
3. if some are proven wrong, a rule was unsafe: warn (:class:`ScreeningRepairWarning`),
   release them and solve again;
4. if the full gap meets ``tol`` (or the solver ran out of iterations), stop;
5. otherwise tighten the inner tolerance (the reduced optimum is the full one only
   within the reduced solution's ball) and, after a few attempts, release the fixed
   variables that keep the full gap open, without a proof of a wrong decision (so no
   warning).

The answer is then a certified point of the full problem whatever the rules did
(``doc/theory/safety.rst``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .._utils.warnings import ScreeningRepairWarning, warn_user

#: Reduced solves, each with a 10x tighter inner tolerance, before the fixed variables
#: that keep the full gap open are released.
CERTIFY_ATTEMPTS = 4


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


@dataclass
class CertifiedResult:
    """What :func:`certified_solve` returns."""

    certificate: Certificate
    n_iter: int
    converged: bool  # the full relative gap met ``tol``


def certified_solve(task: ReducedSolve, *, tol: float, max_iter: int,
                    describe: str) -> CertifiedResult:
    """Solve ``task``'s reduced problem until its answer is certified on the full problem
    (see the module docstring). ``describe`` names the value being solved in the
    warning a repair issues (e.g. ``"SafeSVC at C=0.1"``).

    A solve that stops at ``max_iter`` ends the loop: ``converged`` is then False and
    the caller decides how to warn (a path's internal step need not).
    """
    inner_tol, n_iter = tol, 0
    cert = None
    for attempt in range(CERTIFY_ATTEMPTS + 1):
        iters, solver_converged = task.solve(inner_tol, max(max_iter - n_iter, 1))
        n_iter += iters
        cert = task.certify()
        if cert.n_wrong:
            warn_user(
                f"certificate: {cert.n_wrong} screened variable(s) violate their "
                f"optimality condition ({describe}); they were put back and the problem "
                "re-solved. Please report this (a rule was unsafe).",
                ScreeningRepairWarning)
            task.release(cert.wrong, proven=True)
            continue
        if cert.rel_gap <= tol or not solver_converged or n_iter >= max_iter:
            break
        if attempt == CERTIFY_ATTEMPTS - 1 and cert.n_loose:
            # the reduced optimum is certified only up to its ball: release what keeps
            # the full gap open (no proof of a wrong decision, so no warning)
            task.release(cert.loose, proven=False)
        inner_tol *= 0.1
    return CertifiedResult(cert, n_iter, cert.rel_gap <= tol)
