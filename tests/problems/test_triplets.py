"""Triplet sets (doc/theory/metric_learning.rst: the k-NN triplet set, H_t, computing
with pairs): counts, neighbours, norms, pair trick, user triplets and the memory refusal,
against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import MinMaxScaler
from threadpoolctl import threadpool_limits

from sklearn_safescreen._utils import memory
from sklearn_safescreen.problems import triplets as _triplets
from sklearn_safescreen.problems.triplet_problem import sum_h, triplet_values
from sklearn_safescreen.problems.triplets import (
    build_triplets,
    count_knn_triplets,
    estimate_memory,
    resolve_k,
    triplets_from_indices,
)


def scaled(loader):
    X, y = loader(return_X_y=True)
    return MinMaxScaler((-1, 1)).fit_transform(X), y


def explicit_H(X, trip):
    i, j, l = trip
    a, b = X[i] - X[l], X[i] - X[j]
    return np.outer(a, a) - np.outer(b, b)


def brute_knn_triplets(X, y, k):
    """Loop-based reference of the k-NN triplet set: k nearest same-class and other-class
    instances (squared Euclidean, ties by smaller index), all combinations."""
    out = []
    n = X.shape[0]
    for i in range(n):
        d = ((X - X[i]) ** 2).sum(axis=1)
        same = sorted((d[j], j) for j in range(n) if j != i and y[j] == y[i])
        diff = sorted((d[l], l) for l in range(n) if y[l] != y[i])
        ks = len(same) if k is None else k
        kd = len(diff) if k is None else min(k, len(diff))
        for _, j in same[:ks]:
            for _, l in diff[:kd]:
                out.append((i, j, l))
    return np.array(out)


def test_counts_match_the_k_nn_construction():
    X, y = scaled(load_iris)
    assert build_triplets(X, y, None).n_triplets == 735_000
    assert build_triplets(X, y, 5).n_triplets == 3_750
    Xw, yw = scaled(load_wine)
    assert build_triplets(Xw, yw, None).n_triplets == 1_232_288
    assert build_triplets(Xw, yw, 5).n_triplets == 4_450
    # the two-class example of Yoshida et al. 2019, Sec. 1, and the k-NN count formula
    assert count_knn_triplets(np.repeat([0, 1], 100), None) == 1_980_000
    assert count_knn_triplets(np.repeat(np.arange(7), 330), 20) == 2310 * 400


@pytest.mark.parametrize("k", [1, 3, None])
def test_knn_triplets_equal_brute_force_with_ties(k):
    rng = np.random.RandomState(0)
    # integer coordinates: many exact distance ties, broken by index
    X = rng.randint(0, 3, size=(24, 2)).astype(float)
    y = np.arange(24) % 3
    ts = build_triplets(X, y, k)
    got = ts.indices()
    want = brute_knn_triplets(X, y, k)
    assert np.array_equal(np.sort(got.view("i4,i4,i4"), axis=0),
                          np.sort(want.astype(np.int32).view("i4,i4,i4"), axis=0))
    assert ts.pos.dtype == np.int32 and ts.neg.dtype == np.int32


def test_norms_inner_products_and_aggregation_against_explicit_matrices():
    rng = np.random.RandomState(1)
    X = rng.randn(15, 4)
    y = np.arange(15) % 3
    ts = build_triplets(X, y, 2)
    trips = ts.indices()
    H = np.array([explicit_H(X, t) for t in trips])
    assert np.allclose(ts.hnorm, np.linalg.norm(H, axis=(1, 2)), rtol=1e-10)
    Q = rng.randn(4, 4)
    Q = Q + Q.T  # indefinite on purpose
    assert np.allclose(triplet_values(ts, Q, False), np.einsum("tij,ij->t", H, Q))
    w = rng.rand(trips.shape[0])
    assert np.allclose(sum_h(ts, w, False), np.einsum("t,tij->ij", w, H))
    idx = np.array([0, 3, 5, 5, 7])
    assert np.allclose(sum_h(ts, np.ones(idx.size), False, idx), H[idx].sum(axis=0))
    # diagonal metric: norms and values of diag(H_t)
    tsd = build_triplets(X, y, 2, diagonal=True)
    hd = np.einsum("tii->ti", H)
    assert np.allclose(tsd.hnorm, np.linalg.norm(hd, axis=1))
    q = rng.randn(4)
    assert np.allclose(triplet_values(tsd, q, True), hd @ q)
    assert np.allclose(sum_h(tsd, w, True), w @ hd)


def test_user_triplets_round_trip_and_validation():
    rng = np.random.RandomState(2)
    X = rng.randn(10, 3)
    T = np.array([[0, 1, 2], [0, 1, 3], [4, 5, 0], [4, 5, 0]])
    ts = triplets_from_indices(X, T)
    assert np.array_equal(ts.indices(), T)
    H = np.array([explicit_H(X, t) for t in T])
    assert np.allclose(ts.hnorm, np.linalg.norm(H, axis=(1, 2)))
    with pytest.raises(ValueError, match=r"must lie in \[0, 9\]"):
        triplets_from_indices(X, [[0, 1, 10]])
    with pytest.raises(ValueError, match="shape"):
        triplets_from_indices(X, [[0, 1]])
    with pytest.raises(ValueError, match="integer"):
        triplets_from_indices(X, [[0, 1, 2.5]])


def test_bad_label_configurations():
    X = np.random.RandomState(0).randn(12, 2)
    with pytest.raises(ValueError, match="at least two classes"):
        build_triplets(X, np.zeros(12), 2)
    with pytest.raises(ValueError, match=r"k=5 is larger than class 0 allows: it has 4 "
                                         r"samples.* k <= 3"):
        build_triplets(X, np.arange(12) % 3, 5)
    ts = build_triplets(X, np.arange(12) % 3, "auto")
    assert resolve_k(np.arange(12) % 3, "auto") == 3
    assert ts.n_triplets == count_knn_triplets(np.arange(12) % 3, 3) == 12 * 3 * 3
    # a singleton class anchors nothing but is a different-class instance for others;
    # the other class has only that one different-class instance
    y = np.r_[np.zeros(11), 1]
    with pytest.raises(ValueError, match="has 11 of the 12 samples, so 1 of another"):
        build_triplets(X, y, 2)
    ts = build_triplets(X, y, "auto")
    assert ts.n_triplets == 11 * 1 * 1 == count_knn_triplets(y, 1)
    assert np.all(ts.indices()[:, 2] == 11)
    assert resolve_k(np.r_[np.zeros(30), np.ones(30)], "auto") == 10
    assert resolve_k(y, None) is None
    with pytest.raises(ValueError, match="no class has two samples"):
        build_triplets(X[:3], np.arange(3), 1)


def test_memory_estimate_and_refusal(monkeypatch):
    assert estimate_memory(10**6, 10**4, 10) == 10**6 * _triplets.BYTES_PER_TRIPLET + \
        10**4 * 8 * 38
    # a diagonal set stores one matrix of squares, which the solver reads in place
    assert estimate_memory(10**6, 10**4, 10, diagonal=True) == \
        10**6 * _triplets.BYTES_PER_TRIPLET + 10**4 * 8 * 18
    monkeypatch.setattr(memory, "available_memory", lambda: 10**6)
    X, y = scaled(load_iris)
    with pytest.raises(MemoryError, match=r"735,000 triplets .* GiB"):
        build_triplets(X, y, None)
    with pytest.raises(MemoryError, match="GiB available"):
        triplets_from_indices(X, np.zeros((20000, 3), dtype=int))


def test_memory_estimate_matches_a_measured_fit():
    """The up-front figure is within a factor of the traced peak of a real fit."""
    import tracemalloc

    from sklearn.datasets import make_classification

    from sklearn_safescreen.metric_learning import SafeMetricLearner

    X, y = make_classification(n_samples=2000, n_features=6, n_informative=4, n_classes=3,
                               random_state=0)
    SafeMetricLearner(k=2).fit(X[:60], y[:60])  # first-call allocations outside it
    tracemalloc.start()
    ml = SafeMetricLearner(k=8, warm_start=True, tol=1e-4)
    lam_L = ml._critical_value(X, y)
    for f in (0.5, 0.1):
        ml.set_params(alpha=f * lam_L).fit(X, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    est = estimate_memory(ml.n_triplets_, ml._path.paths[0].ts.n_pairs, X.shape[1])
    # an upper bound (it refuses fits up front), not more than 2.5x the traced peak
    assert 0.4 * est <= peak - X.nbytes <= 1.1 * est, (peak, est)


def _nearest_by_full_sort(X, anchors, candidates, k, exclude_self):
    """The definition: exact squared distances from differences, every candidate
    sorted (stable, so ties go to the lower position)."""
    C = X[candidates]
    dist = ((X[anchors][:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
    if exclude_self:
        dist[np.arange(anchors.size), np.arange(anchors.size)] = np.inf
    return np.argsort(dist, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("seed", range(16))
def test_nearest_equals_the_full_sort_with_many_exact_ties(seed):
    """The tiled search returns exactly the neighbours of the full sort, ties included:
    integer-valued points (many equal distances), a large offset (the expansion
    |a|^2 + |c|^2 - 2a'c cancels, up to points whose distances are below its rounding
    error), entries near the largest magnitude a fit accepts and far below one (the
    single-precision copies are scaled by a power of two), sizes on both sides of the
    tiles' edges, approximations in single and double precision, on one and two
    threads."""
    from sklearn_safescreen.problems._triplet_set_fast import ANCHOR_TILE, CANDIDATE_TILE

    from sklearn_safescreen.problems.triplets import _nearest

    rng = np.random.RandomState(seed)
    n = rng.choice([7, 60, 2 * ANCHOR_TILE + 5, 700, CANDIDATE_TILE + 37])
    # (NumPy's pairwise sum splits rows of more than 128 terms: 150 features)
    d = rng.choice([1, 2, 5] if n > 1000 else [1, 2, 5, 13, 33] if n > 100
                   else [1, 5, 13, 33, 150])
    X = rng.randint(-2, 3, size=(n, d)).astype(float)
    if seed % 8 == 0:
        X = X * 1e3 + 1e7
    elif seed % 8 == 1:
        X = X * 0.25
    elif seed % 8 == 2:  # the expansion's rounding exceeds the distances themselves
        X = 1e8 + rng.rand(n, d) * 1e-2
    elif seed % 8 == 3:
        X = X * 1e45 + rng.rand(n, d) * 1e30
    elif seed % 8 == 4:
        X = (X + rng.rand(n, d) * 1e-3) * 1e-200
    elif seed % 8 == 5:
        X = X + rng.rand(n, d) * 1e-14
    anchors = np.sort(rng.choice(n, size=max(2, n // 2), replace=False))
    others = np.setdiff1d(np.arange(n), anchors)
    for k in sorted({1, 2, min(7, anchors.size - 1)}):
        for threads, precision in ((1, None), (2, np.float32), (1, np.float64)):
            with threadpool_limits(threads, user_api="openmp"):
                np.testing.assert_array_equal(
                    _nearest(X, anchors, anchors, k, True, precision),
                    _nearest_by_full_sort(X, anchors, anchors, k, True))
                if others.size >= k:
                    np.testing.assert_array_equal(
                        _nearest(X, anchors, others, k, False, precision),
                        _nearest_by_full_sort(X, anchors, others, k, False))


@pytest.mark.parametrize("diagonal", [False, True])
def test_a_triplet_set_is_the_same_on_one_and_on_two_threads(diagonal):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((700, 9))
    y = rng.integers(0, 3, 700)
    with threadpool_limits(1, user_api="openmp"):
        one = build_triplets(X, y, 4, diagonal)
    with threadpool_limits(2, user_api="openmp"):
        two = build_triplets(X, y, 4, diagonal)
    for name in ("pairs", "diff", "pos", "neg", "hnorm"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))


@pytest.mark.parametrize("diagonal", [False, True])
def test_stored_pairs_norms_and_values_match_the_triplets_from_x(diagonal):
    # a diagonal set stores the squared differences: its norms and values must still be
    # those of diag(H_t) = a o a - b o b, computed here from X directly
    from sklearn_safescreen.problems import triplet_problem as tp

    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 5)) * rng.uniform(0.1, 10, 5)
    y = rng.integers(0, 3, 40)
    ts = build_triplets(X, y, 3, diagonal)
    T = ts.indices()
    A, B = X[T[:, 0]] - X[T[:, 2]], X[T[:, 0]] - X[T[:, 1]]
    q = rng.uniform(0, 2, 5)
    if diagonal:
        H = A * A - B * B
        expect_norm, expect_val = np.linalg.norm(H, axis=1), H @ q
        Q = q
    else:
        Q = np.diag(q) + 0.1
        expect_norm = np.sqrt(np.maximum(
            (A * A).sum(1) ** 2 - 2 * (A * B).sum(1) ** 2 + (B * B).sum(1) ** 2, 0))
        expect_val = np.einsum("ij,jk,ik->i", A, Q, A) - np.einsum("ij,jk,ik->i", B, Q, B)
    assert ts.squared is diagonal
    np.testing.assert_allclose(ts.hnorm, expect_norm, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tp.triplet_values(ts, Q, diagonal), expect_val,
                               rtol=1e-11, atol=1e-10)
    G = tp.sum_h(ts, np.ones(ts.n_triplets), diagonal)
    expect_G = H.sum(0) if diagonal else A.T @ A - B.T @ B
    np.testing.assert_allclose(G, expect_G, rtol=1e-11, atol=1e-9)


def test_the_search_holds_blas_to_one_thread_while_its_threads_run(monkeypatch):
    """Each OpenMP thread of the k-NN search calls BLAS on its tiles: BLAS's own threads
    are held to one meanwhile (outside a fit they would compete with the search's:
    1.7x its wall time on two cores), and given back afterwards."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [lib["num_threads"] for lib in threadpool_info()
                if lib["user_api"] == "blas"]

    seen = []
    real = _triplets.nearest_in_tiles

    def recording(*args):
        seen.append(blas_threads())
        return real(*args)

    monkeypatch.setattr(_triplets, "nearest_in_tiles", recording)
    monkeypatch.setattr(_triplets, "current_n_threads", lambda: 2)
    X = np.random.default_rng(0).standard_normal((50, 3))
    with threadpool_limits(2, user_api="blas"):
        before = blas_threads()
        _triplets._nearest(X, np.arange(25), np.arange(25, 50), 3, False)
        assert blas_threads() == before
    assert seen and all(n == 1 for n in seen[0])
