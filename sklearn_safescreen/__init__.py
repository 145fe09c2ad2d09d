"""Scikit-learn estimators whose solvers use safe screening."""

# first: sets the OpenMP wait policy before a compiled module loads the runtime
from ._utils import openmp_policy  # noqa: F401, I001

try:  # any compiled module: a source tree without them must say so, not fail deep down
    from ._utils import _fingerprint_fast  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on how it was installed
    import os as _os

    raise ImportError(
        "sklearn_safescreen is imported from "
        f"{_os.path.dirname(_os.path.abspath(__file__))}, a source tree whose compiled "
        "modules are not built. This happens when Python runs in the repository's "
        "folder after a plain `pip install .` (which built them into site-packages): "
        "run from another folder, or install with `pip install -e .`, which builds "
        "them in the source tree.") from err
from ._utils.warnings import LongFitWarning, PrecisionWarning, ScreeningRepairWarning
from .base import fit_context
from .doubly_sparse import SafeDoublySparseSVC, SafeDoublySparseSVR
from .engine.report import ScreeningEvent, ScreeningReport
from .lad import SafeLAD
from .lp_svm import SafeLPSVC
from .lp_svm_exact_path import lp_svm_path, lp_svm_path_at
from .metric_learning import SafeMetricLearner
from .model_selection import RegularizationPathCV
from .path import doubly_sparse_path
from .svm import SafeSVC

__version__ = "0.1.0"

__all__ = [
    "LongFitWarning",
    "PrecisionWarning",
    "RegularizationPathCV",
    "SafeDoublySparseSVC",
    "SafeDoublySparseSVR",
    "SafeLAD",
    "SafeLPSVC",
    "SafeMetricLearner",
    "SafeSVC",
    "ScreeningEvent",
    "ScreeningRepairWarning",
    "ScreeningReport",
    "doubly_sparse_path",
    "fit_context",
    "lp_svm_path",
    "lp_svm_path_at",
]
