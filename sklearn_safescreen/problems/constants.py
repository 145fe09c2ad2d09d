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

#: Unit roundoff of float64, :math:`u=2^{-53}` (half the machine epsilon): the unit of
#: the rounding-error bounds of the box-QP references (``problems/box_qp.py``).
UNIT_ROUNDOFF = 2.0**-53

#: Relative disagreement allowed between two evaluations of one kernel value (in row
#: :math:`i` and in row :math:`j`) when they are not symmetric by construction: sparse
#: inputs (scikit-learn's distances) and callable kernels (``KernelMatrix.entry_rtol``;
#: the dense built-in kernels need none). Part of the error bound of kernel margins,
#: :math:`\text{KERNEL\_RTOL}\sum_j|Q_{ij}\alpha_j|`.
KERNEL_RTOL = 2 * UNIT_ROUNDOFF
