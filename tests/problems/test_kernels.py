"""The kernel matrix of the box QP (problems/kernels.py): cached rows equal direct
evaluation; memory that would not fit is refused with the figure."""

from __future__ import annotations

import numpy as np
import pytest

from sklearn_safescreen.problems.kernels import KernelMatrix


def test_kernel_matvec_and_block_from_the_cache_equal_direct_evaluation():
    """The row cache's fast paths (every row cached; all rows added in place; many rows
    taken from the whole sums) give the kernel products and blocks of direct
    evaluation; with a cache too small the computed path is taken."""
    rng = np.random.RandomState(1)
    X = rng.randn(300, 4)
    K = np.exp(-0.3 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)) + 1.0
    for cache_size in (50, 0.01):  # everything fits / 4 rows fit: computed
        km = KernelMatrix(X, "rbf", {"gamma": 0.3}, 1.0, cache_size=cache_size)
        every = np.arange(300)
        for _ in range(2):  # the second time every needed row is already cached
            cols = np.sort(rng.choice(300, 40, replace=False))
            v = rng.randn(40)
            v[::5] = 0.0
            np.testing.assert_allclose(km.matvec(every, cols, v), K[:, cols] @ v,
                                       rtol=1e-12, atol=1e-12)
            # a few rows (their columns of the cached rows) and many, in any order
            # (the cached rows summed whole, the rows taken from the sum)
            for n_rows in (25, 150):
                rows = rng.choice(300, n_rows, replace=False)
                np.testing.assert_allclose(km.matvec(rows, cols, v),
                                           K[np.ix_(rows, cols)] @ v, rtol=1e-12,
                                           atol=1e-12)
            np.testing.assert_allclose(km.block(cols, rows), K[np.ix_(cols, rows)],
                                       rtol=1e-12, atol=1e-12)


def test_kernel_memory_refusal_counts_the_newton_factor(monkeypatch):
    """A kernel block and the Newton factor beside it that would not fit in half the
    memory are refused with the figure, before anything is allocated."""
    from sklearn_safescreen._utils import memory
    from sklearn_safescreen.problems import kernels

    monkeypatch.setattr(memory, "available_memory", lambda: 2 * 8 * 3000 * 3000)
    kernels.check_kernel_memory(2100, 2100)  # 70.6 MB of 72 MB: fits
    with pytest.raises(MemoryError, match=r"3000 x 3000 float64 kernel block and Newton "
                                          r"factor of up to 1500 variables would need about "
                                          r"0\.08 GiB, more than 50% of the 0\.13 GiB"):
        kernels.check_kernel_memory(3000, 1500)


def test_small_kernel_blocks_are_not_probed(monkeypatch):
    """A block and factor within ``BLOCK_BYTES`` (the size of the transient blocks
    allocated unprobed) skip the memory probe; one byte-row more is probed."""
    from sklearn_safescreen._utils import memory
    from sklearn_safescreen.problems import kernels

    probes = []

    def probe():
        probes.append(1)
        return 0  # no memory at all: a probed block is refused

    monkeypatch.setattr(memory, "available_memory", probe)
    n = int(np.sqrt(kernels.BLOCK_BYTES / 16))  # block and factor of n: within
    kernels.check_kernel_memory(n, n)
    assert not probes
    with pytest.raises(MemoryError):
        kernels.check_kernel_memory(n + 1, n + 1)
    assert probes




def test_blocks_outside_the_cache_stay_within_the_block_budget(monkeypatch):
    """Products over kernel blocks that are not cached (matvec, the compensated
    matvec, the margins of a callable kernel, filling the cache) compute at most
    ``BLOCK_BYTES`` of kernel values at a time, whatever n and the columns, and give
    the values of one unblocked evaluation."""
    from sklearn.metrics.pairwise import rbf_kernel

    from sklearn_safescreen.problems import kernels
    from sklearn_safescreen.problems.box_qp_data import SVMData

    rng = np.random.RandomState(0)
    n = 600
    X = rng.standard_normal((n, 4))
    K = rbf_kernel(X, gamma=0.3) + 1.0
    v = rng.standard_normal(n)
    sizes = []
    compute = KernelMatrix._compute

    def recording_compute(self, rows, cols, out=None, columns=None):
        sizes.append(8 * len(rows) * len(cols))
        return compute(self, rows, cols, out=out, columns=columns)

    monkeypatch.setattr(KernelMatrix, "_compute", recording_compute)
    monkeypatch.setattr(kernels, "BLOCK_BYTES", 8 * 100 * n)  # 100 rows of n columns
    km = KernelMatrix(X, "rbf", {"gamma": 0.3}, 1.0, cache_size=0)
    every = np.arange(n)
    assert np.allclose(km.matvec(every, every, v), K @ v, rtol=1e-12, atol=1e-12)
    acc, comp, _ = km.dot2_matvec(every, v)
    assert np.allclose(acc + comp, K @ v, rtol=1e-12, atol=1e-12)
    assert len(sizes) > 2 and max(sizes) <= kernels.BLOCK_BYTES
    sizes.clear()
    big = KernelMatrix(X, "rbf", {"gamma": 0.3}, 1.0, cache_size=8 * n * n / 2**20 + 1)
    assert np.allclose(big.matvec(every, every, v), K @ v, rtol=1e-12, atol=1e-12)
    assert len(sizes) > 2 and max(sizes) <= kernels.BLOCK_BYTES  # filled in blocks
    sizes.clear()
    y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
    callable_km = KernelMatrix(X, lambda A, B: rbf_kernel(A, B, gamma=0.3), {}, 1.0)
    problem = SVMData(X, callable_km, y, np.ones(n)).problem(1.0)
    sizes.clear()  # (the diagonal's evaluations)
    alpha = rng.rand(n)
    q, _ = problem.accurate_margins(alpha)
    assert np.allclose(q, y * (K @ (y * alpha)), rtol=1e-12, atol=1e-12)
    assert len(sizes) > 2 and max(sizes) <= kernels.BLOCK_BYTES
