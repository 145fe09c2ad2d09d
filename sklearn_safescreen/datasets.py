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


def make_sparse_text_classification(n_samples: int = 72309, n_features: int = 20958,
                                    density: float = 0.002448, label_noise: float = 0.07,
                                    informative: float = 0.05, random_state=None):
    """A sparse binary problem shaped like a bag-of-words set (by default the shape and
    density of the LIBSVM set real-sim used by Shibagaki et al. 2016).

    Each row has a Poisson number of non-zeros (mean ``density * n_features``) drawn
    from a Zipf-like popularity of the columns (frequent and rare "words"), with
    positive log-normal values, and is scaled to unit norm. The labels are the sign of
    ``X @ w`` around its median for a sparse ``w`` (``informative`` of the features,
    standard normal), and a fraction ``label_noise`` of them is flipped.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), values in {-1, 1}
    """
    import scipy.sparse as sp

    rng = check_random_state(random_state)
    popularity = 1.0 / (np.arange(n_features) + 10.0) ** 1.05
    popularity /= popularity.sum()
    columns_by_rank = rng.permutation(n_features)
    per_row = rng.poisson(density * n_features, size=n_samples).clip(1)
    rows = np.repeat(np.arange(n_samples), per_row)
    cols = columns_by_rank[rng.choice(n_features, size=rows.size, p=popularity)]
    values = rng.lognormal(0.0, 0.7, size=rows.size)
    X = sp.csr_matrix((values, (rows, cols)), shape=(n_samples, n_features))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    w = np.zeros(n_features)
    support = rng.choice(n_features, size=max(1, int(informative * n_features)),
                         replace=False)
    w[support] = rng.randn(support.size)
    score = X @ w
    y = np.where(score > np.median(score), 1.0, -1.0)
    flip = rng.rand(n_samples) < label_noise
    y[flip] = -y[flip]
    return X, y
