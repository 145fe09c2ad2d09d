"""ScreeningReport of SafeSVC fits."""

from __future__ import annotations

import numpy as np
import pytest
from _screened import screened_fit

from sklearn_safescreen import SafeSVC, ScreeningEvent, ScreeningReport


def _binary(n=60, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = (X @ rng.randn(d) + 0.8 * rng.randn(n) > 0).astype(int)
    return X, y


def _multiclass(n=90, d=3, k=3, seed=0):
    rng = np.random.RandomState(seed)
    y = np.arange(n) % k
    X = 2.0 * rng.randn(k, d)[y] + 1.2 * rng.randn(n, d)
    return X, y


EVENT_FIELDS = {"rule", "moment", "value", "n_lower", "n_upper", "n_variables",
                "rule_time", "solver_time", "task"}


def _check_report(report, n_variables):
    assert isinstance(report, ScreeningReport)
    d = report.to_dict()
    assert {"n_variables", "n_screened", "screening_rate", "events"} <= set(d)
    assert d["n_variables"] == n_variables == report.n_variables
    assert d["n_screened"] == report.n_screened
    assert 0 <= d["n_screened"] <= d["n_variables"]
    assert d["screening_rate"] == pytest.approx(d["n_screened"] / d["n_variables"])
    assert d["screening_rate"] == pytest.approx(report.screening_rate)
    assert 0.0 <= d["screening_rate"] <= 1.0
    assert isinstance(d["events"], list) and len(d["events"]) == len(report.events) > 0
    for ev in d["events"]:
        assert isinstance(ev, dict)
        assert EVENT_FIELDS <= set(ev)
        assert ev["moment"] in ("reference", "dynamic", "closed_form", "repair", "solve")
        assert ev["rule_time"] >= 0 and ev["solver_time"] >= 0
    r = repr(report)
    assert r.startswith("ScreeningReport(")
    assert f"{report.n_screened}/{report.n_variables}" in r
    assert "samples" in r
    assert all(len(line) < 200 for line in r.splitlines())
    assert "\n" in r  # the events are listed, one per line
    return d


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
@pytest.mark.parametrize("screening", ["IT", "BT1", "BT2", "DVI", None])
def test_report_binary(kernel, screening):
    X, y = _binary()
    model = screened_fit(SafeSVC(kernel=kernel, C=10.0, screening=screening), X, y)
    _check_report(model.screening_report_, len(y))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_report_multiclass_counts_every_task(kernel):
    X, y = _multiclass()
    model = screened_fit(SafeSVC(kernel=kernel, C=10.0, multi_class="ovr"), X, y)
    d = _check_report(model.screening_report_, 3 * len(y))
    tasks = {ev["task"] for ev in d["events"]}
    assert tasks == {"0", "1", "2"}


def test_report_multiclass_string_labels():
    X, y = _multiclass()
    names = np.array(["ant", "bee", "cat"])
    model = screened_fit(SafeSVC(kernel="linear", C=1.0, multi_class="ovr"), X, names[y])
    d = _check_report(model.screening_report_, 3 * len(y))
    assert {ev["task"] for ev in d["events"]} == set(names)


def test_report_sample_weight_and_precomputed():
    X, y = _binary(n=50)
    sw = np.random.RandomState(0).uniform(0, 2, len(y))
    model = screened_fit(SafeSVC(kernel="precomputed", C=3.0), X @ X.T, y, sample_weight=sw)
    _check_report(model.screening_report_, len(y))


def test_report_closed_form():
    """Below C_min the solution is alpha = C c (Ogawa et al. 2013, Lemma 9): everything
    is screened."""
    X, y = _binary()
    model = screened_fit(SafeSVC(kernel="linear", C=1e-6), X, y)
    d = _check_report(model.screening_report_, len(y))
    assert d["n_screened"] == len(y)
    assert d["screening_rate"] == 1.0
    assert any(ev["moment"] == "closed_form" for ev in d["events"])


def test_report_is_renewed_on_every_fit():
    X, y = _binary()
    model = SafeSVC(kernel="rbf", warm_start=True)
    reports = []
    for C in [0.1, 1.0, 10.0]:
        screened_fit(model.set_params(C=C), X, y)
        reports.append(model.screening_report_)
        _check_report(model.screening_report_, len(y))
    assert reports[0] is not reports[1]
    assert all(ev.value == 10.0 for ev in reports[2].events)
    # along the path the reference rule reports what it screened
    assert any(ev.moment == "reference" for ev in reports[2].events)


def test_report_value_matches_C_rbf():
    X, y = _binary()
    model = screened_fit(SafeSVC(kernel="rbf", C=7.5), X, y)
    events = model.screening_report_.events
    # the cold start is the closed form at C_min (its own value); the rest is at C
    assert events[0].rule == "Cmin" and events[0].value < 7.5
    assert all(ev.value == pytest.approx(7.5) for ev in events[1:])


def test_report_repr_long_is_truncated():
    rep = ScreeningReport(n_variables=10, n_screened=4)
    for i in range(20):
        rep.add(ScreeningEvent("IT", "reference", float(i), 1, 2, 10))
    r = repr(rep)
    assert "4/10" in r and "40.0%" in r
    assert len(r.splitlines()) <= 12
    assert "earlier events" in r
    assert rep.to_dict()["screening_rate"] == pytest.approx(0.4)


def test_empty_report():
    rep = ScreeningReport()
    assert rep.screening_rate == 0.0
    d = rep.to_dict()
    assert d["n_variables"] == 0 and d["events"] == []
    assert repr(rep).startswith("ScreeningReport(")


def test_report_counts_several_kinds_of_variables():
    rep = ScreeningReport(variables={"features": 50, "samples": 200})
    rep.add(ScreeningEvent("gap", "dynamic", 0.5, 30, 0, 50, kind="features"))
    rep.add(ScreeningEvent("gap", "dynamic", 0.5, 100, 40, 200, kind="samples"))
    rep.set_final(30, 0, kind="features")
    rep.set_final(100, 40, kind="samples")
    assert rep.kind == "features" and rep.n_variables == 50 and rep.n_screened == 30
    assert rep.screening_rates == {"features": 0.6, "samples": 0.7}
    d = rep.to_dict()
    assert d["variables"]["samples"] == {"n_variables": 200, "n_lower": 100,
                                         "n_upper": 40, "n_screened": 140,
                                         "screening_rate": 0.7}
    assert "30/50 features, 140/200 samples screened (60.0%, 70.0%)" in repr(rep)
    other = ScreeningReport(variables={"features": 50, "samples": 100})
    other.set_final(10, 0, kind="features")
    rep.merge(other)
    assert rep.counts["features"].n_variables == 100
    assert rep.counts["features"].n_screened == 40
    assert rep.counts["samples"].n_variables == 300


def test_closed_form_is_not_called_screening():
    X, y = _binary()
    model = SafeSVC(kernel="linear", C=1e-6, screening=None).fit(X, y)
    rep = model.screening_report_
    assert rep.closed_form and "decided in closed form" in repr(rep)
    assert "screened" not in repr(rep).splitlines()[0]
