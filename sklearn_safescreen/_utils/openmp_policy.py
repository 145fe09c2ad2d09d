"""The OpenMP wait policy of the package's parallel loops: passive unless the user chose.

An OpenMP runtime's default lets an idle thread spin for a while before it sleeps. The
package's loops are short (a kernel row, the margins of one certificate) and run
between sequential solver steps, so on a machine whose cores are also busy with other
processes a spinning thread holds a core that the thread it waits for needs, so a
parallel region can take orders of magnitude longer than its work, and two threads
end up slower than one (``doc/benchmarks.md``, "Parallel loops"; git has the runs that
compared the wait policies).
The runtime reads the variable when it is loaded, so it is set (unless
``OMP_WAIT_POLICY`` or libgomp's ``GOMP_SPINCOUNT`` is already set) before the first
compiled module of the package loads; child processes inherit it.
"""

from __future__ import annotations

import os


def default_to_passive_wait() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the user set a wait policy."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


default_to_passive_wait()  # on import: sklearn_safescreen/__init__.py imports this first
