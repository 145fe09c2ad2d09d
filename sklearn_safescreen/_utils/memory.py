"""The one memory probe of the package, and the refusal that quotes it.

Every place that could allocate more than a machine holds (a dense kernel block, a
triplet set, the solutions stored along a path) estimates its need first and calls
:func:`check_memory`, which refuses with both figures before anything is allocated.
"""

from __future__ import annotations

import os

#: Used when the operating system does not say.
_FALLBACK_BYTES = 8 << 30


def available_memory() -> int:
    """Bytes of memory available to this process: ``MemAvailable`` on Linux (what can be
    allocated without swapping), else the free physical pages, else 8 GiB."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    try:  # pragma: no cover - not Linux
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return _FALLBACK_BYTES


def check_memory(need: float, what: str, advice: str, fraction: float) -> None:
    """Raise ``MemoryError`` when ``need`` bytes exceed ``fraction`` of the available
    memory. The message reads "``what`` would need X GiB, more than P% of the Y GiB
    available; ``advice``"."""
    avail = available_memory()
    if need > fraction * avail:
        raise MemoryError(
            f"{what} would need about {need / 2**30:.2f} GiB, more than {fraction:.0%} "
            f"of the {avail / 2**30:.2f} GiB available; {advice}")
