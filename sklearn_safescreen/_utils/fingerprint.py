r"""Cheap, exact identities of training data, for warm starts.

A warm-started fit reuses the previous solution only if the problem is the same; the
:func:`data_fingerprint` of the data and of every parameter the problem depends on
(each through :func:`parameter_token`) decides it.
"""

from __future__ import annotations

import functools
import hashlib
import numbers

import numpy as np
import scipy.sparse as sp

from ._fingerprint_fast import multilinear_hashes

#: Dense matrices larger than this are fingerprinted through :func:`content_digest`;
#: smaller ones are hashed byte for byte, which is then cheap, and exact.
_DIGEST_MIN_SIZE = 4096


def data_fingerprint(*parts) -> str:
    """A hash of arrays (dense or sparse) and plain parameters.

    Large dense float64 arrays go through :func:`content_digest` first (several times
    cheaper than hashing every byte, and still certain to notice any single change).
    """
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        if sp.issparse(part):
            if part.format not in ("csr", "csc"):
                part = part.tocsr()
            # in its own layout (a conversion would cost more than the hash), the
            # layout named: the same matrix in the other one is other data here
            for arr in (part.data, part.indices, part.indptr):
                h.update(_array_bytes(arr))
            h.update(repr((part.format, part.shape, part.data.dtype.str)).encode())
        elif isinstance(part, np.ndarray):
            if part.dtype == np.float64 and part.ndim <= 2 and part.size > _DIGEST_MIN_SIZE:
                part = content_digest(part.reshape(part.shape[0], -1))
            h.update(np.ascontiguousarray(part).tobytes())
            h.update(repr((part.shape, part.dtype.str)).encode())
        else:
            h.update(repr(part).encode())
    return h.hexdigest()


def parameter_token(value, held: list):
    """A stand-in for a parameter's value that :func:`data_fingerprint` hashes exactly
    when, and only when, the value is the same.

    Numbers become their type's kind and exact value (``np.float64(0.5)`` is ``0.5``;
    ``1`` and ``1.0`` stay distinct, which only costs a cold start), strings and
    ``None`` themselves, arrays and sparse matrices their content's fingerprint, dicts
    their items sorted (``{0: 2.0, 1: 1.0}`` in any order), lists, tuples and sets their
    elements. Any other object (a callable kernel, an estimator) stands for itself by
    identity and is appended to ``held``: whoever keeps the token must keep ``held``
    alive too, so that no other object can take its id meanwhile.
    """
    # the common exact types first: a key is computed at every path step, and the
    # abstract-class checks below are slower
    kind = type(value)
    if value is None or kind is str:
        return value
    if kind is float:
        return ("float", value.hex())
    if kind is int:
        return ("int", value)
    if kind is bool:
        return ("bool", value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool | np.bool_):
        return ("bool", bool(value))
    if isinstance(value, numbers.Integral):
        return ("int", int(value))
    if isinstance(value, numbers.Real):
        return ("float", float(value).hex())  # exact, nan and infinities included
    if isinstance(value, np.ndarray) or sp.issparse(value):
        return ("array", data_fingerprint(value))
    if isinstance(value, dict):
        items = [(parameter_token(k, held), parameter_token(v, held))
                 for k, v in value.items()]
        return ("dict", tuple(sorted(items, key=repr)))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(parameter_token(v, held) for v in value))
    if isinstance(value, set | frozenset):
        return ("set", tuple(sorted((parameter_token(v, held) for v in value), key=repr)))
    held.append(value)
    return ("object", type(value).__module__, type(value).__qualname__, id(value))


def content_digest(X: np.ndarray) -> np.ndarray:
    r"""A cheap identity of a dense float64 matrix's exact content.

    Hashing the whole of ``X`` with blake2b, a serial pass over every byte, at every
    warm-started fit would cost a sizeable share of a short screened path step; this
    digest is two vectorised integer products instead: split every float64 into its two
    32-bit
    halves :math:`V` (an ``n x 2d`` integer matrix) and take two independent multilinear
    hashes :math:`h = a^\top (V b) \bmod 2^{64}` with fixed pseudo-random odd 64-bit
    :math:`a, b`. Every half has an odd coefficient :math:`a_ib_j` and differs by less
    than :math:`2^{32}`, so a change of any single entry (down to one bit, including a
    sign) always changes ``h``, and several changes cancel only if a sum of terms
    :math:`a_ib_j\Delta_{ij}` vanishes modulo :math:`2^{64}` in both hashes (for random
    coefficients, probability about :math:`2^{-32}` each); row and column permutations
    change ``h``. A collision would only make ``warm_start`` screen from another
    problem's reference, which the full-problem certificate still catches.
    """
    V = np.ascontiguousarray(X).view(np.uint32)  # no copy
    return np.array([*X.shape, *_multilinear(V)], dtype=np.uint64)


def _multilinear(V: np.ndarray) -> tuple[int, int]:
    """The two multilinear hashes of :func:`content_digest` of the 32-bit matrix ``V``."""
    n, m = V.shape
    return multilinear_hashes(V, _odd_coefficients(n, 1), _odd_coefficients(m, -1),
                              _odd_coefficients(n, 2), _odd_coefficients(m, -2))


#: 1-D arrays are digested as rows of this many elements (the coefficient vectors stay
#: small), the remainder hashed as bytes.
_ROW = 1024


def _array_bytes(arr: np.ndarray) -> bytes:
    """What :func:`data_fingerprint` hashes for one array of a sparse matrix: its
    :func:`content_digest`-style multilinear hashes (any array of 4- or 8-byte
    elements, as rows of ``_ROW`` elements) when large, else its bytes."""
    arr = np.ascontiguousarray(arr)
    if arr.size <= _DIGEST_MIN_SIZE or arr.dtype.itemsize not in (4, 8):
        return arr.tobytes()
    flat = arr.reshape(-1)
    body = (flat.size // _ROW) * _ROW
    V = flat[:body].view(np.uint32).reshape(body // _ROW, -1)  # no copy
    return np.array([flat.size, *_multilinear(V)], dtype=np.uint64).tobytes() \
        + flat[body:].tobytes() + arr.dtype.str.encode()


@functools.lru_cache(maxsize=8)
def _odd_coefficients(size: int, seed: int) -> np.ndarray:
    """Fixed pseudo-random odd 64-bit integers (cached: a path reuses them)."""
    rng = np.random.RandomState(abs(seed) * 2 + (seed < 0))
    coef = rng.randint(0, 2**63, size=size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    coef.flags.writeable = False
    return coef
