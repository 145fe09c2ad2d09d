"""Writing benchmark results into ``doc/benchmarks.md``, one section per benchmark."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "doc" / "benchmarks.md"


def write_section(title: str, text: str) -> None:
    """Replace the section that starts with ``title`` (a ``## `` heading line) by
    ``text`` where it stands, or append it; the other sections are kept as they are."""
    old = DOC.read_text() if DOC.exists() else "# Benchmarks\n\n"
    start = old.find(title)
    if start < 0:
        DOC.write_text(old.rstrip() + "\n\n" + text)
        return
    end = old.find("\n## ", start + 1)
    rest = old[end + 1:] if end >= 0 else ""
    DOC.write_text(old[:start] + text.rstrip() + "\n" + ("\n" + rest if rest else ""))

