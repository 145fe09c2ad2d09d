"""The solvers' generator of a path step (``engine/protocol.py``): the stream of
``np.random.RandomState(seed)``, without building a new bit generator at every step,
and independent between threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from sklearn_safescreen.engine.protocol import StepSettings, legacy_generator


def _draws(rng: np.random.RandomState) -> tuple:
    return (tuple(rng.permutation(300)), tuple(rng.randint(2**31 - 1, size=20)),
            rng.rand(), tuple(rng.standard_normal(5)))


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**31 - 2])
def test_same_stream_as_a_new_random_state(seed):
    expected = _draws(np.random.RandomState(seed))
    assert _draws(legacy_generator(seed)) == expected
    legacy_generator(seed + 1).rand()  # another step's draws in between
    assert _draws(StepSettings(rule=None, tol=1e-4, max_iter=10, seed=seed).rng()) \
        == expected


def test_threads_do_not_share_a_stream():
    """Paths of one-vs-rest tasks fit on threads at the same time: each thread's
    generator is its own (one thread re-seeding does not move another's)."""
    expected = _draws(np.random.RandomState(3))
    start, results = threading.Barrier(4), []

    def work(seed):
        rng = legacy_generator(seed)
        start.wait()
        for _ in range(50):  # the others re-seed theirs meanwhile
            legacy_generator(seed)
            rng = legacy_generator(seed)
        results.append((seed, _draws(rng)))

    threads = [threading.Thread(target=work, args=(s,)) for s in (3, 4, 5, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert dict(results)[3] == expected
    assert {s: d for s, d in results} == {s: _draws(np.random.RandomState(s))
                                         for s in (3, 4, 5, 6)}
