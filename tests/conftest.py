"""Test configuration: the shared helper modules of tests/ (``_svm_models``,
``_triplet_models``, ``_box_models``, ``_profiles``) and the independent exact SVM
solver of tests/screening/ (``_svm_truth``) are importable from every test folder; the
hypothesis profiles (``_profiles``: ``ci`` when ``CI=true``, else ``dev``) are
registered and loaded before any test module is imported."""

import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for folder in (_HERE, _HERE / "screening"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from _profiles import register  # noqa: E402

from sklearn_safescreen.engine import cost  # noqa: E402

HYPOTHESIS_PROFILE = register()

# Every step screens: the tests of the rules, reports and repairs look at the screening
# itself, and which steps the cost model's measurements let screen depends on the
# machine's speed. Set in the environment, so that worker processes (loky, dask) see it
# too (unless the environment sets it: SKLEARN_SAFESCREEN_COST_MODEL=auto runs the
# suite with the default); the cost model's own tests choose their mode.
os.environ.setdefault(cost.ENVIRONMENT, "always")


def pytest_report_header(config):
    return f"hypothesis profile: {HYPOTHESIS_PROFILE}"
