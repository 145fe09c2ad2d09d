"""The next step's reference, built from the certificate's own figures, is the one
``BoxQP.reference`` computes from the same margins, bit for bit."""

import numpy as np
import pytest

from sklearn_safescreen import SafeSVC
from sklearn_safescreen.engine import box_qp_reduced as engine_reduced


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_reference_from_the_certificate_is_the_full_computation(monkeypatch, kernel):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 4))
    y = np.where(X[:, 0] + 0.7 * rng.standard_normal(120) > 0, 1, 0)
    built = engine_reduced.ReducedBoxQP.reference
    seen = []

    def checked(self):
        ref = built(self)
        if self.margin_error is not None:
            full = self.problem.reference(self.C, self.alpha,
                                          (self.margins, self.margin_error))
        else:
            full = self.problem.reference(self.C, self.alpha)
        for name in ("C", "gap", "gap_error", "hard_margin"):
            assert getattr(ref, name) == getattr(full, name), name
        for name in ("alpha", "margins", "margin_error"):
            np.testing.assert_array_equal(getattr(ref, name), getattr(full, name))
        seen.append(self.margin_error is not None)
        return ref

    monkeypatch.setattr(engine_reduced.ReducedBoxQP, "reference", checked)
    model = SafeSVC(kernel=kernel, gamma=0.3, warm_start=True)
    # small C (bounded samples) to large (the hard-margin gap takes over)
    for C in np.logspace(-2, 3, 8):
        model.set_params(C=C).fit(X, y)
    assert seen
    # kernel mode takes the certificate's figures (its margins are compensated)
    assert all(seen) if kernel == "rbf" else not any(seen)


def test_hard_margin_answers_carry_the_full_reference():
    """Fits answered by the hard-margin gap take the reference to their C with its
    C-free hard-margin gap kept: the reference is the one ``BoxQP.reference`` computes
    at that C, bit for bit."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 3))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, 0)  # separable
    model = SafeSVC(kernel="rbf", gamma=0.5, warm_start=True)
    answered = 0
    for C in np.logspace(0, 6, 10):
        model.set_params(C=C).fit(X, y)
        path = model._path.paths[0]
        ref = path.reference
        full = path.data.problem(ref.C).reference(ref.C, ref.alpha,
                                                  (ref.margins, ref.margin_error))
        for name in ("C", "gap", "gap_error", "hard_margin"):
            assert getattr(ref, name) == getattr(full, name), name
        answered += any(e.rule == "hard_margin" for e in model.screening_report_.events)
    assert answered >= 2
