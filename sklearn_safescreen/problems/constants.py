"""Numerical tolerances shared by the problems, the rules and the solvers.

Each lives here once; the theory pages (``doc/theory/safety.rst``) explain them.
"""

#: Relative slack of every strict screening decision ``bound > threshold``: a variable
#: is fixed only when its bound clears the threshold by this much of the magnitudes
#: involved, so that round-off in the bounds cannot fix a variable that sits exactly on
#: its threshold.
SCREEN_RTOL = 1e-9

#: Relative and absolute inflation of a triplet screening radius,
#: ``r (1 + RADIUS_RTOL) + RADIUS_ATOL max(1, ||centre||)``: the radius is computed from
#: norms and gaps that carry round-off of that order.
RADIUS_RTOL = 1e-9
RADIUS_ATOL = 1e-12

#: Smallest magnitude a relative gap is divided by.
TINY = 1e-300
