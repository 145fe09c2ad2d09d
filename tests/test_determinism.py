"""Same inputs, same model: every family's path gives bit-identical models in two
processes, one of them beside a CPU-bound job and on another number of threads.

Which steps screen is decided from counted work, never from a clock
(:mod:`sklearn_safescreen.engine.policy`), and the compiled loops give the same
results whatever the number of threads that share them; a model that differed between
the two runs would break both promises.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap

#: Fits every family along a short path with the default screening policy and prints
#: one digest per path of every fitted array of every step.
SCRIPT = textwrap.dedent("""
    import hashlib, json, sys
    import numpy as np
    from sklearn.datasets import load_wine, make_classification, make_regression
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    from sklearn_safescreen import (RegularizationPathCV, SafeDoublySparseSVC,
                                    SafeDoublySparseSVR, SafeLAD, SafeLPSVC,
                                    SafeMetricLearner, SafeSVC)
    from sklearn_safescreen.path import estimator_path

    def digest(arrays):
        h = hashlib.sha256()
        for a in arrays:
            a = np.ascontiguousarray(np.asarray(a.toarray() if hasattr(a, "toarray") else a))
            h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
        return h.hexdigest()

    def path_digest(est, X, y, values=None, **grid):
        res = estimator_path(est, X, y, values, **grid)
        arrays = [v for sol in res.solutions for _, v in sorted(sol.items())]
        skipped = [bool(r.skipped) for r in res.reports if r is not None]
        return digest(arrays + [np.asarray(skipped)])

    X, y = make_classification(300, 8, n_informative=5, random_state=0)
    X = StandardScaler().fit_transform(X)
    Xr, yr = make_regression(200, 6, noise=3.0, random_state=0)
    Xs, ys = make_classification(120, 150, n_informative=10, random_state=0)
    Xw, yw = load_wine(return_X_y=True)
    Xm, ym = make_classification(300, 30, n_informative=5, n_redundant=15, random_state=0)
    Xm = MinMaxScaler((-1, 1)).fit_transform(Xm)
    Xw = StandardScaler().fit_transform(Xw)
    out = {
        "SafeSVC linear": path_digest(SafeSVC(kernel="linear"), X, y, np.logspace(-2, 1, 6)),
        "SafeSVC rbf": path_digest(SafeSVC(gamma=0.1), X, y, np.logspace(-1, 2, 6)),
        "SafeLAD": path_digest(SafeLAD(), Xr, yr / yr.std(), n_values=6),
        "SafeDoublySparseSVC": path_digest(SafeDoublySparseSVC(), Xs, ys,
                                           n_values=6, eps=1e-2),
        "SafeDoublySparseSVR": path_digest(SafeDoublySparseSVR(), Xr, yr / yr.std(),
                                           n_values=6, eps=1e-2),
        "SafeLPSVC": path_digest(SafeLPSVC(), Xs, ys, n_values=6, eps=1e-2),
        "SafeMetricLearner": path_digest(SafeMetricLearner(), Xw, yw, n_values=40,
                                         eps=0.9 ** 39),
        "SafeMetricLearner diagonal": path_digest(
            SafeMetricLearner(metric="diagonal", k=10), Xm, ym, n_values=30, eps=0.9 ** 29),
    }
    cv = RegularizationPathCV(SafeSVC(kernel="linear"), values=np.logspace(-2, 1, 5),
                              cv=3).fit(X, y)
    out["RegularizationPathCV"] = digest(
        [cv.cv_results_["mean_test_score"], cv.best_estimator_.coef_])
    json.dump(out, sys.stdout)
""")


def _burn(seconds: float) -> None:
    """A CPU-bound job (a busy loop) for ``seconds``."""
    import time

    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1


def _run(threads: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env.pop("SKLEARN_SAFESCREEN_SCREENING", None)  # the shipped default
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, check=True, timeout=600)
    return json.loads(done.stdout)


def test_every_family_gives_the_same_model_in_another_process_under_load():
    quiet = _run(threads=1)
    burner = multiprocessing.get_context("spawn").Process(target=_burn, args=(600.0,))
    burner.start()
    try:
        loaded = _run(threads=2)
    finally:
        burner.terminate()
        burner.join()
    assert set(quiet) == set(loaded)
    differ = [name for name in quiet if quiet[name] != loaded[name]]
    assert not differ, f"models differ between the two runs: {differ}"

