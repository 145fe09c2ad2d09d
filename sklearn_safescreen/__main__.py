"""``python -m sklearn_safescreen``: model selection along a safely screened path.

By default: :class:`~sklearn_safescreen.RegularizationPathCV` over a linear SafeSVC
on synthetic data (``make_classification``, 20000 x 50, large enough for screening to
matter), 20 values of C from C_min to 10, 5 folds. It prints, per value, the screening
rate, the fit time and the CV score, then the best value, and then times GridSearchCV
on the same grid and folds (``--no-compare`` skips it). ``--help`` lists every option.
"""

from __future__ import annotations

import sys

from ._cli.parser import DATASETS, ESTIMATORS, PROG
from ._cli.run import _one_line_warning, main

__all__ = ["DATASETS", "ESTIMATORS", "PROG", "_one_line_warning", "main"]

if __name__ == "__main__":
    sys.exit(main())
