"""Limits shared by the estimators, each defined once.

Each constant names one meaning; limits that differ in meaning (entries squared or
raised to the fourth power) have different names, so that changing one cannot change
the other by accident.
"""

from __future__ import annotations

#: Largest magnitude of an entry of X (and of real targets) for the estimators whose
#: arithmetic squares entries: norms, margins, kernel values and correlations are sums
#: of products of two entries, summed again into duality gaps. Squares of 1e100 stay far
#: from float64's 1.8e308 for every regularisation value the estimators accept.
MAX_ENTRY = 1e100
#: Largest magnitude of an entry of X for metric learning, whose triplet values are
#: differences of squared distances that the solver squares again: fourth powers of the
#: entries, summed over triplets, which must stay far from float64's 1.8e308.
MAX_ENTRY_FOURTH_POWER = 1e50
#: Fraction of the available memory a linear fit may use for its copies of X (the
#: design matrix of the samples of positive weight, its squares, a reduced copy).
MEMORY_FRACTION = 0.8
