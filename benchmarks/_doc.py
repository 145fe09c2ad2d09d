"""Writing benchmark results into ``doc/benchmarks.md``, one section per benchmark."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "doc" / "benchmarks.md"

#: Ends the part of a section that a benchmark writes. What follows it in the section
#: (earlier runs, profiles and notes added by hand) is kept when the benchmark writes
#: the section again.
END_OF_GENERATED = "<!-- end of the generated part: the text below it is kept -->"


def write_section(title: str, text: str, doc: Path | None = None) -> None:
    """Replace the generated part of the section that starts with ``title`` (a ``## ``
    heading line) by ``text`` where it stands, or append the section; the rest of the
    section, after :data:`END_OF_GENERATED`, and the other sections are kept as they
    are. A section written before the marker existed keeps its whole text below the
    new part (nothing written by hand is lost; the old tables are trimmed by hand)."""
    doc = DOC if doc is None else doc
    old = doc.read_text() if doc.exists() else "# Benchmarks\n\n"
    # the report's headings name no work items: a script's "## SafeLAD (issue 4)" writes
    # the section "## SafeLAD"
    title, text = _without_work_items(title), _without_work_items(text)
    generated = text.rstrip() + "\n\n" + END_OF_GENERATED + "\n"
    start = _find_heading(old, title)
    if start < 0:
        doc.write_text(old.rstrip() + "\n\n" + generated)
        return
    end = old.find("\n## ", start + 1)
    end = len(old) if end < 0 else end + 1
    section = old[start:end]
    marker = section.find(END_OF_GENERATED)
    if marker >= 0:
        kept = section[marker + len(END_OF_GENERATED):].lstrip("\n")
    else:
        kept = section[section.find("\n") + 1:].lstrip("\n")  # all but its heading
    body = generated + ("\n" + kept.rstrip() + "\n" if kept.strip() else "")
    rest = old[end:]
    doc.write_text(old[:start] + body + ("\n" + rest if rest else ""))


_WORK_ITEM = re.compile(r" \((?:issue|issues) [^)]*\)")


def _without_work_items(text: str) -> str:
    """``text`` without the parenthesised work items of its headings."""
    return "\n".join(_WORK_ITEM.sub("", line) if line.startswith("#") else line
                     for line in text.split("\n"))


def _find_heading(doc: str, title: str) -> int:
    """Where the heading line ``title`` starts in ``doc`` (the whole line, or the line
    followed by ``:``, ``,`` or `` (``), or -1."""
    for m in re.finditer(r"^" + re.escape(title) + r"(?=$|[:,]| \()", doc, re.MULTILINE):
        return m.start()
    return -1
