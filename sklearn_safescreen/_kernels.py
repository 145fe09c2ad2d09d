"""Kernel evaluation for the dual problems: blocks on demand, never the whole matrix.

The bias is a regularised extra feature of constant value ``s`` (``intercept_scaling``),
so every kernel value carries ``+ s**2`` (spec svm A1.1).  All blocks are float64.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels

#: Rows per chunk when a kernel block is reduced on the fly (bounded memory).
_CHUNK_ROWS = 2048


class KernelMatrix:
    """Lazily evaluated kernel ``K(x_i, x_j) + bias**2`` over the training samples.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features), or ndarray of shape
        (n_samples, n_samples) when ``kernel="precomputed"``.
    kernel : {"linear", "rbf", "poly"} or callable or "precomputed"
    kernel_params : dict
        ``gamma``, ``degree``, ``coef0`` as resolved by the estimator.
    bias : float
        Constant bias feature (0 for no intercept).
    """

    def __init__(self, X, kernel: str | Callable, kernel_params: dict, bias: float):
        self.X = X
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.bias_sq = float(bias) ** 2
        self.n_samples = 0 if X is None else X.shape[0]
        self.n_evaluations = 0  # kernel values computed so far (cost accounting, R17)

    def block(self, rows, cols) -> np.ndarray:
        """``K[rows][:, cols] + bias**2`` as a C-contiguous float64 array."""
        self.n_evaluations += len(rows) * len(cols)
        if len(rows) == 0 or len(cols) == 0:
            return np.zeros((len(rows), len(cols)))
        if self.kernel == "precomputed":
            K = np.asarray(self.X[np.ix_(rows, cols)], dtype=np.float64)
        else:
            K = self.cross(self.X[rows], self.X[cols])
        if self.bias_sq:
            K = K + self.bias_sq
        return np.ascontiguousarray(K, dtype=np.float64)

    def cross(self, A, B) -> np.ndarray:
        """Kernel between two sets of raw samples (no bias)."""
        if callable(self.kernel):
            K = self.kernel(A, B)
        else:
            K = pairwise_kernels(A, B, metric=self.kernel, filter_params=True,
                                 **self.kernel_params)
        K = K.toarray() if sp.issparse(K) else K
        return np.asarray(K, dtype=np.float64)

    def diag(self) -> np.ndarray:
        """``K(x_i, x_i) + bias**2`` for every sample, in O(n) kernel evaluations
        for the built-in kernels."""
        X, k, prm = self.X, self.kernel, self.kernel_params
        if k == "precomputed":
            d = np.asarray(X.diagonal(), dtype=np.float64).copy()
        elif k == "rbf":
            d = np.ones(self.n_samples)
        elif k in ("linear", "poly"):
            sq = (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
                  else np.einsum("ij,ij->i", X, X))
            d = sq if k == "linear" else (prm["gamma"] * sq + prm["coef0"]) ** prm["degree"]
        else:  # callable: diagonal of small diagonal blocks
            d = np.empty(self.n_samples)
            for start in range(0, self.n_samples, 256):
                stop = min(start + 256, self.n_samples)
                d[start:stop] = np.diag(self.cross(X[start:stop], X[start:stop]))
        return d + self.bias_sq

    def matvec(self, rows, cols, v) -> np.ndarray:
        """``(K[rows][:, cols] + bias**2) @ v`` computed in row chunks."""
        rows = np.asarray(rows)
        out = np.zeros(len(rows))
        if len(cols) == 0 or len(rows) == 0:
            return out
        for start in range(0, len(rows), _CHUNK_ROWS):
            sl = slice(start, start + _CHUNK_ROWS)
            out[sl] = self.block(rows[sl], cols) @ v
        return out


def physical_memory_bytes() -> int:
    """Total physical memory of this machine (fallback: 8 GiB)."""
    try:
        import os

        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 * 2**30


def check_kernel_memory(n_free: int, fraction: float = 0.5) -> None:
    """Refuse a dense ``n_free x n_free`` kernel block that would not fit in memory."""
    need = 8.0 * n_free * n_free
    have = physical_memory_bytes() * fraction
    if need > have:
        raise MemoryError(
            f"the kernel solver needs a dense {n_free} x {n_free} float64 kernel block "
            f"({need / 2**30:.1f} GiB) but only {have / 2**30:.1f} GiB may be used on this "
            "machine; use kernel='linear', fewer samples, or a path whose screening "
            "leaves fewer free samples."
        )
