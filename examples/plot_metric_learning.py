"""
Safe triplet screening along a metric-learning path
===================================================

:class:`~sklearn_safescreen.metric_learning.SafeMetricLearner` learns a Mahalanobis
metric from k-nearest-neighbour triplets. Walking the regularisation path from the
critical value (where the solution is known in closed form) downwards with
``warm_start=True``, each solution screens the triplets of the next problem: most of
them are proven to have zero loss (margin > 1) or linear loss (margin < 1 - gamma) and
leave the optimisation, without changing the learned metric.

The plot shows the fraction of triplets screened at each step and the k-NN accuracy of
the learned metric on held-out data.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import MinMaxScaler

from sklearn_safescreen.metric_learning import SafeMetricLearner
from sklearn_safescreen.path import critical_value

X, y = load_wine(return_X_y=True)
X = MinMaxScaler((-1, 1)).fit_transform(X)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)

learner = SafeMetricLearner(k=5, warm_start=True, tol=1e-6)
# the critical value lambda_L of the training data (after a fit: critical_alpha_); above
# it, M* = G_+ / alpha exactly
lam_L = critical_value(learner, Xtr, ytr)
alphas = lam_L * 0.8 ** np.arange(1, 50)
rates, scores = [], []
for alpha in alphas:
    learner.set_params(alpha=alpha).fit(Xtr, ytr)
    rates.append(learner.screening_report_.screening_rate)
    knn = KNeighborsClassifier(n_neighbors=5).fit(learner.transform(Xtr), ytr)
    scores.append(knn.score(learner.transform(Xte), yte))

euclid = KNeighborsClassifier(n_neighbors=5).fit(Xtr, ytr).score(Xte, yte)
print(f"{learner.n_triplets_} triplets; mean screening rate {np.mean(rates):.1%}")
print(f"best k-NN accuracy {max(scores):.3f} (Euclidean: {euclid:.3f})")
print(learner.screening_report_)

fig, ax = plt.subplots(2, 1, sharex=True, figsize=(6, 5))
ax[0].semilogx(alphas, rates, marker=".")
ax[0].set_ylabel("triplets screened")
ax[1].semilogx(alphas, scores, marker=".", label="learned metric")
ax[1].axhline(euclid, color="gray", ls="--", label="Euclidean")
ax[1].set_xlabel("alpha (lambda)")
ax[1].set_ylabel("5-NN test accuracy")
ax[1].legend()
ax[0].invert_xaxis()
fig.tight_layout()
plt.show()
