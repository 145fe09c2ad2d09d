"""The papers' toy generators and the loaders of shipped data."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_random_state


def make_ogawa_toy(n_samples: int = 1000, random_state=None):
    """The toy of Ogawa et al. (2013), Fig. 1: two 2-D Gaussians, means -/+0.5, sd 1.5.

    Odd positions (1-based) are class -1, even ones class +1.
    """
    rng = check_random_state(random_state)
    y = np.where(np.arange(1, n_samples + 1) % 2 == 1, -1.0, 1.0)
    X = rng.normal(scale=1.5, size=(n_samples, 2)) + 0.5 * y[:, None]
    return X, y


def make_wang_toy(which: int, n_per_class: int = 1000, random_state=None):
    """Toy1/2/3 of Wang et al. (2014), Sec. 6: class +/- ~ N((+/-mu, +/-mu), 0.75^2 I) with
    mu = 1.5, 0.75, 0.5 for ``which`` = 1, 2, 3."""
    mu = {1: 1.5, 2: 0.75, 3: 0.5}[which]
    rng = check_random_state(random_state)
    y = np.repeat([1.0, -1.0], n_per_class)
    X = rng.normal(scale=0.75, size=(2 * n_per_class, 2)) + mu * y[:, None]
    return X, y


def load_standardized_breast_cancer():
    """Breast cancer Wisconsin (diagnostic), standardised: 569 x 30, shipped with
    scikit-learn (one of the data sets of Ogawa et al. 2013, Table II)."""
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y
