"""Fits with every path step screened, for the tests that look at the screening itself
(its rules, events, reports and repairs) on problems where the paths' policy would run
plain steps (e.g. a kernel whose rows all fit in the cache)."""

from __future__ import annotations

from sklearn_safescreen import fit_context


def screened_fit(model, *args, **kwargs):
    """``model.fit(*args, **kwargs)`` with every step screening (``fit_context(model,
    screening="always")``); returns the fitted model."""
    with fit_context(model, screening="always"):
        return model.fit(*args, **kwargs)
