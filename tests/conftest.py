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
    """Every path step of the test's fits screens, whatever the policy would choose: for
    the tests that look at the screening itself (its rules, events, reports and
    repairs) on problems where the policy runs plain steps (a kernel whose rows all fit
    in the cache). Set in the environment, so that worker processes see it too."""
    from sklearn_safescreen.engine.policy import ENVIRONMENT

    monkeypatch.setenv(ENVIRONMENT, "always")
