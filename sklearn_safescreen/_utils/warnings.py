"""Warnings that point at the user's call.

A warning raised deep inside a fit (the engine, a solver) would otherwise name a line of
this package. :func:`warn_user` names the first frame outside this package and outside
the scikit-learn and joblib machinery that called it (``Pipeline.fit``,
``GridSearchCV.fit``, a joblib worker), i.e. the line the user wrote.
"""

from __future__ import annotations

import os
import sys
import warnings

import joblib
import sklearn

#: Frames in these folders are skipped when looking for the user's line.
_INTERNAL = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (
    sys.modules[__name__.split(".")[0]], sklearn, joblib))


class ScreeningRepairWarning(UserWarning):
    """A screened variable was proven wrong by the certificate and put back.

    This means a screening rule was unsafe: please report it. The returned solution is
    nevertheless the certified optimum of the full problem.
    """


class PrecisionWarning(UserWarning):
    """The problem is beyond what float64 arithmetic can certify at this ``C``.

    The rounding error of the duality gap (of the margins that enter it, which ``C``
    multiplies) reaches the requested tolerance relative to the objective: the returned
    model may be far from the optimum of the exact problem, and no solver working in
    double precision can do better. Lower ``C`` (beyond some value the solution of a
    separable or exactly penalised problem no longer changes), or rescale the data.
    """


def warn_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` with the stack level of the first frame outside this package,
    scikit-learn and joblib (the caller's own code; the outermost frame if there is
    none, as in a worker process)."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_INTERNAL):
            break
        if frame.f_back is None:
            break
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)


class LongFitWarning(UserWarning):
    """A kernel fit is estimated to take long (at least a minute); the message gives the
    estimate and what it rests on. ``verbose=1`` prints progress during the fit."""
