"""The doubly sparse rules' down-dated column norms on weighted dense data.

Within one screening event, the feature rule's column norms over the undecided samples,
:math:`\\sqrt{\\sum_i c_i x_{ij}^2}`, are down-dated by the newly decided samples' terms
rather than recomputed. The samples' weights :math:`c_i` must weigh those terms: the
dense and the sparse layouts down-date by separate code, so on strongly weighted data
(weights drawn from 0.2 to 3, then normalised to mean 1) the dense problem must decide
exactly what its CSR copy decides, and both what the rules' formulas decide (the own
implementation of ``test_doubly_sparse_rules``, norms recomputed from scratch each
round). The pairs below are ones where the samples decided in a first round change the
feature step's decisions through the down-dated norms.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from _doubly_sparse_models import HINGE, SVR, make_data, reference
from test_doubly_sparse_rules import full_reduced, oracle, own_gap, pair_at, perturbed

from sklearn_safescreen.problems.doubly_sparse import DoublySparseData
from sklearn_safescreen.screening.doubly_sparse import screen_doubly_sparse

#: (seed, loss, lambda / lambda_max, relative noise of the pair, handed gap / own gap)
CASES = [
    (11, HINGE, 0.5, 1e-3, 1.0),
    (30, HINGE, 0.5, 1e-3, 1.0),
    (31, SVR, 0.5, 1e-3, 1.0),
    (40, SVR, 0.5, 1e-2, 1.0),
    (6, HINGE, 0.2, 1e-1, 1e-2),
    (36, SVR, 0.5, 1e-1, 1e-2),
]
NOISES = (1e-3, 1e-2, 1e-1)
BETA = 1.0


def _case(seed, loss, frac, noise, shrink):
    """The weighted dense problem, lambda, the pair (the optimum moved by ``noise``,
    drawn after the smaller noises from one stream) and the gap handed to the rules."""
    data = make_data(seed, 40, 30, loss, weights=True, sparse=False, gamma=0.5,
                     epsilon=0.1)
    assert data.weights.min() < 0.5 and data.weights.max() > 1.5
    lam = frac * data.lambda_max()
    ref = reference(data, lam, BETA)
    rng = np.random.RandomState(seed)
    for level in NOISES:
        u = perturbed(ref, rng, level)
        if level == noise:
            break
    return data, lam, u, shrink * own_gap(data, u, lam, BETA)


def _screen(data, u, lam, G):
    red = full_reduced(data)
    t, gap = pair_at(red, u, lam, BETA)
    return screen_doubly_sparse(red, u, t, replace(gap, primal=G, dual=0.0, error=0.0),
                                lam, BETA)


@pytest.mark.parametrize("case", CASES)
def test_dense_and_sparse_layouts_decide_the_same(case):
    data, lam, u, G = _case(*case)
    dense_ev = _screen(data, u, lam, G)
    csr = DoublySparseData(sp.csr_matrix(data.X), data.y, data.weights, data.loss,
                           data.gamma, data.epsilon)
    sparse_ev = _screen(csr, u, lam, G)
    assert dense_ev.rounds >= 2  # samples decided, then features from down-dated norms
    for name in ("features", "at_zero", "at_box", "kept_features", "kept_samples"):
        np.testing.assert_array_equal(getattr(dense_ev, name), getattr(sparse_ev, name),
                                      err_msg=name)


@pytest.mark.parametrize("case", CASES)
def test_dense_decisions_are_the_formulas(case):
    """The formulas with radii 1e-6 smaller may not screen less, 1e-6 larger not more."""
    data, lam, u, G = _case(*case)
    ev = _screen(data, u, lam, G)
    skip = dict(skip_f=ev.kept_features, skip_s=ev.kept_samples)
    F, Z, B, bv = oracle(data, u, G, lam, BETA, "simultaneous", 1 - 1e-6, **skip)
    F_in, Z_in, B_in, _ = oracle(data, u, G, lam, BETA, "simultaneous", 1 + 1e-6, **skip)
    for name, got, inner, outer in (("features", ev.features, F_in, F),
                                    ("at_zero", ev.at_zero, Z_in, Z),
                                    ("at_box", ev.at_box, B_in, B)):
        assert not (got & ~outer).any(), f"{name} beyond the formulas"
        assert not (inner & ~got).any(), f"{name} missed"
    np.testing.assert_array_equal(ev.box_value[ev.at_box], bv[ev.at_box])
