"""Screening across kernel parameters (doc/theory/svm_lad.rst, "Screening across kernel
parameters"): the solution under one gamma, as a reference of the problem under another.

Oracle: the unscreened optimum of the new problem, solved to a duality gap of 1e-12
with screening off. A rule may fix a sample only where that optimum has it at the same
end of its box; the fits that take the foreign reference must give the unscreened model.
"""

from __future__ import annotations

import numpy as np
import pytest
from _profiles import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from sklearn_safescreen.base import fit_context
from sklearn_safescreen.lad import SafeLAD
from sklearn_safescreen.model_selection import RegularizationPathCV
from sklearn_safescreen.screening.lad import LAD_RULES
from sklearn_safescreen.screening.svm import SVM_RULES
from sklearn_safescreen.svm import SafeSVC

EXACT = dict(tol=1e-12, max_iter=10**6, screening=None, warm_start=True)


def problem(seed: int, n: int, d: int, regression: bool, n_classes: int = 2):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    if regression:
        y = X[:, 0] + 0.5 * np.sin(3 * X[:, 1 % d]) + 0.3 * rng.standard_t(2, n)
        return X, y
    score = X[:, 0] + 0.7 * X[:, 1 % d] ** 2 + 0.8 * rng.randn(n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    y[:2 * n_classes] = np.repeat(np.arange(n_classes), 2)  # every class present
    return X, y


def family(regression: bool, **params):
    return (SafeLAD if regression else SafeSVC)(kernel="rbf", **params)


def dual_points(model) -> list:
    return [(p.reference.C, p.reference.alpha.copy()) for p in model._path.paths]


cases = st.fixed_dictionaries({
    "seed": st.integers(0, 10_000),
    "n": st.integers(15, 60),
    "d": st.integers(1, 4),
    "regression": st.booleans(),
    "log_gamma": st.floats(-2.0, 1.0),
    "log_ratio": st.floats(-1.0, 1.0),  # the other gamma, up to a factor 10 either way
    "log_C": st.floats(-2.0, 2.0),
    "log_C_ratio": st.floats(-1.0, 1.0),  # the foreign point's C, scaled to C
})


@settings(max_examples=examples(60), deadline=None)
@given(case=cases)
def test_every_decision_from_another_gammas_point_holds_at_the_optimum(case):
    """Each rule of the family, from the reference the path builds out of the solution
    under another gamma (at another C, scaled): every sample it fixes is at that end of
    its box at the unscreened optimum of the new problem."""
    X, y = problem(case["seed"], case["n"], case["d"], case["regression"])
    gamma = 10.0 ** case["log_gamma"]
    C = 10.0 ** case["log_C"]
    C_ref = C * 10.0 ** case["log_C_ratio"]
    other = family(case["regression"], gamma=gamma * 10.0 ** case["log_ratio"], C=C_ref,
                   **EXACT).fit(X, y)
    exact = family(case["regression"], gamma=gamma, C=C, **EXACT).fit(X, y)
    path = exact._path.paths[0]
    optimum = path.reference.alpha
    box = path.data.problem(C)
    path.reference = None  # the offer is the only reference
    path.offer_reference(*dual_points(other)[0])
    assert path._take_offer(C, path.new_report(), answered=False, verbose=0)
    ref = path.reference
    assert ref.C == C and np.all(ref.alpha >= box.lo) and np.all(ref.alpha <= box.hi)
    atol = 1e-6 * max(1.0, C)
    for rule in (LAD_RULES if case["regression"] else SVM_RULES):
        res = path.screen(rule, ref, C)
        np.testing.assert_allclose(optimum[res.at_lower], box.lo[res.at_lower], atol=atol,
                                   err_msg=f"{rule}: fixed at the lower end")
        np.testing.assert_allclose(optimum[res.at_upper], box.hi[res.at_upper], atol=atol,
                                   err_msg=f"{rule}: fixed at the upper end")


@settings(max_examples=examples(30), deadline=None)
@given(case=cases, n_classes=st.integers(2, 3))
def test_a_fit_offered_another_gammas_solution_gives_the_unscreened_model(case,
                                                                          n_classes):
    """The whole fit (screening forced on every step, one offer per one-vs-rest task)
    equals the unscreened fit."""
    regression = case["regression"]
    X, y = problem(case["seed"], case["n"], case["d"], regression, n_classes)
    gamma = 10.0 ** case["log_gamma"]
    C = 10.0 ** case["log_C"]
    C_ref = C * 10.0 ** case["log_C_ratio"]
    tight = dict(tol=1e-10, max_iter=10**6, warm_start=True)
    other = family(regression, gamma=gamma * 10.0 ** case["log_ratio"], C=C_ref,
                   **tight).fit(X, y)
    seeded = family(regression, gamma=gamma, C=C, **tight)
    with fit_context(seeded, screening="always", references=dual_points(other)):
        seeded.fit(X, y)
    assert any(e.rule == "kernel-seed" for e in seeded.screening_report_.events) \
        or seeded.screening_report_.closed_form
    exact = family(regression, gamma=gamma, C=C, **EXACT).fit(X, y)
    method = "predict" if regression else "decision_function"
    a, b = getattr(seeded, method)(X), getattr(exact, method)(X)
    np.testing.assert_allclose(a, b, atol=1e-4 * max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("regression", [False, True])
def test_a_close_gamma_screens(regression):
    """With gammas 5% apart, the other gamma's solution at the same C is a reference
    close to the new optimum: the fit takes it and its rule fixes samples before the
    solve."""
    X, y = problem(3, 300, 4, regression)
    Cs = [0.1, 1.0, 10.0]
    first = family(regression, gamma=0.2, tol=1e-10, max_iter=10**6, warm_start=True)
    second = clone(first).set_params(gamma=0.21)
    screened = []
    for C in Cs:
        with fit_context(first, screening="always"):
            first.set_params(C=C).fit(X, y)
        with fit_context(second, screening="always", references=dual_points(first)):
            second.set_params(C=C).fit(X, y)
        events = second.screening_report_.events
        seed = [e for e in events if e.rule == "kernel-seed"]
        assert len(seed) == 1 and seed[0].rule_time > 0 and "kernel rows" in seed[0].note
        if "taken" in seed[0].note:
            screened.append(sum(e.n_screened for e in events
                                if e.moment == "reference" and e.rule != "kernel-seed"))
        exact = family(regression, gamma=0.21, C=C, **EXACT).fit(X, y)
        method = "predict" if regression else "decision_function"
        np.testing.assert_allclose(getattr(second, method)(X), getattr(exact, method)(X),
                                   atol=1e-4 * max(1.0, np.abs(exact.predict(X)).max()))
    assert screened and max(screened) > 0.2 * len(y)


def test_search_seeds_across_gamma_with_the_same_answer(monkeypatch):
    """RegularizationPathCV with a gamma grid: the walks after the first gamma take the
    previous gamma's solutions and screen from them; the scores are GridSearchCV's and
    those of the unseeded search."""
    monkeypatch.setenv("SKLEARN_SAFESCREEN_SCREENING", "always")
    X, y = problem(4, 240, 4, False)
    est = SafeSVC(kernel="rbf", tol=1e-10, max_iter=10**6)
    grid = {"gamma": [0.2, 0.21, 0.22]}
    Cs = [0.1, 1.0, 10.0]
    cv = StratifiedKFold(3)
    seeded = RegularizationPathCV(est, values=Cs, param_grid=grid, cv=cv).fit(X, y)
    plain = RegularizationPathCV(est, values=Cs, param_grid=grid, cv=cv,
                                 kernel_seeds=False).fit(X, y)
    oracle = GridSearchCV(est, {**grid, "C": Cs}, cv=cv).fit(X, y)
    for search in (seeded, plain):
        np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                                   oracle.cv_results_["mean_test_score"], atol=1e-6)
        assert search.best_params_ == oracle.best_params_

    def seeds(search, c):
        return [e for fold in search.path_reports_[c] for r in fold for e in r.events
                if e.rule == "kernel-seed"]

    assert not seeds(seeded, 0)  # the first gamma has no previous one
    for c in (1, 2):
        events = seeds(seeded, c)
        assert len(events) == 3 * len(Cs)  # one offer per fit
        assert any("taken" in e.note for e in events)
    assert not any(seeds(plain, c) for c in range(3))
    # the first fit of a later gamma is screened from the previous gamma's solution
    # instead of starting cold
    first_rates = [seeded.screening_rates_[c][:, 0].mean() for c in (1, 2)]
    assert min(first_rates) > 0
