"""Hypothesis profiles of the test suite: ``dev`` (fast, for development) and ``ci``
(thorough). ``tests/conftest.py`` registers them and loads ``ci`` when the environment
has ``CI=true`` (continuous integration sets it), ``dev`` otherwise;
``HYPOTHESIS_PROFILE=ci`` (or ``dev``) forces one.

Property tests state their example budget for the thorough run through
:func:`examples`, so that each profile scales them (an explicit ``max_examples`` in a
test's ``@settings`` would override any profile).
"""

from __future__ import annotations

import os

from hypothesis import settings

#: fraction of each test's thorough example budget a profile runs
SCALE = {"dev": 0.25, "ci": 1.0}


def register() -> str:
    """Register both profiles, load the selected one and return its name."""
    common = dict(deadline=None, derandomize=True, database=None, print_blob=True)
    settings.register_profile("ci", max_examples=100, **common)
    settings.register_profile("dev", max_examples=10, **common)
    name = os.environ.get("HYPOTHESIS_PROFILE") or (
        "ci" if os.environ.get("CI", "").lower() == "true" else "dev")
    if name not in SCALE:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r}: expected one of {sorted(SCALE)}")
    settings.load_profile(name)
    return name


def examples(thorough: int) -> int:
    """The example budget of the loaded profile for a test whose thorough (``ci``)
    budget is ``thorough``: at least 3 examples."""
    name = settings.get_current_profile_name()
    return max(3, round(thorough * SCALE.get(name, 1.0)))
