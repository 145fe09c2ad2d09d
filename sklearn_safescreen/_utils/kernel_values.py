"""The check of a user's kernel callable's values (below the problems that call it)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def check_kernel_output(K, A, B) -> np.ndarray:
    """The value of a user's kernel callable on ``(A, B)`` as a float64 array, refused
    with a plain message unless it is a finite numeric array of shape
    ``(len(A), len(B))``: the solvers index it by row and column and sum it into
    duality gaps, where a wrong shape or a NaN fails far from its cause."""
    expected = (A.shape[0], B.shape[0])
    if sp.issparse(K):
        K = K.toarray()
    K = np.asarray(K)
    if K.shape != expected:
        raise ValueError(
            f"the kernel callable must return an array of shape (len(A), len(B)) = "
            f"{expected} for inputs of shapes {A.shape} and {B.shape}; it returned "
            f"{'a scalar' if K.ndim == 0 else 'an array'} of shape {K.shape}")
    if K.dtype.kind not in "biuf":
        raise ValueError(f"the kernel callable must return real numbers; it returned "
                         f"an array of dtype {K.dtype}")
    K = K.astype(np.float64, copy=False)
    if not np.isfinite(K).all():
        raise ValueError("kernel returned non-finite values (NaN or inf) on inputs of "
                         f"shapes {A.shape} and {B.shape}")
    return K

