"""Writing benchmark results into ``doc/benchmarks.md``, one section per benchmark."""

from __future__ import annotations

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
    generated = text.rstrip() + "\n\n" + END_OF_GENERATED + "\n"
    start = old.find(title)
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
