"""Test configuration: the shared helper modules of tests/ (``_svm_models``,
``_triplet_models``, ``_box_models``, ``_profiles``) and the independent exact SVM
solver of tests/screening/ (``_svm_truth``) are importable from every test folder; the
hypothesis profiles (``_profiles``: ``ci`` when ``CI=true``, else ``dev``) are
registered and loaded before any test module is imported."""

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for folder in (_HERE, _HERE / "screening"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from _profiles import register  # noqa: E402

HYPOTHESIS_PROFILE = register()


def pytest_report_header(config):
    return f"hypothesis profile: {HYPOTHESIS_PROFILE}"


@pytest.fixture
def every_step(monkeypatch):
    """Every path step screens, in this process and in the worker processes it starts,
    through the environment variable: only for the fits of estimators the test does not
    hold, which :func:`~sklearn_safescreen.fit_context` cannot reach (the clones that a
    path walker or a search fits, above all in worker processes: a process pool of
    ``n_jobs``, a distributed backend). A test that holds the estimator screens its
    fits with ``fit_context(estimator, screening="always")`` instead
    (``_screened.screened_fit``), which belongs to that estimator only. No test of the
    suite needs this fixture today."""
    from sklearn_safescreen.engine.policy import ENVIRONMENT

    monkeypatch.setenv(ENVIRONMENT, "always")
