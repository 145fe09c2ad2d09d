"""``benchmarks/_doc.py``: a benchmark re-writing its section of ``doc/benchmarks.md``
replaces its own tables and keeps what was added by hand below them."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _doc import END_OF_GENERATED, write_section  # noqa: E402


def test_the_hand_written_part_of_a_section_survives_a_new_run(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Other\n\nother text\n")
    write_section("## Scale", "## Scale\n\n| run 1 |\n", doc)
    text = doc.read_text()
    assert text.index("## Other") < text.index("## Scale") < text.index(END_OF_GENERATED)
    # notes added by hand below the generated part, then a later section
    doc.write_text(text + "\nA profile written by hand.\n\n## Later\n\nlater text\n")
    write_section("## Scale", "## Scale\n\n| run 2 |\n", doc)
    text = doc.read_text()
    assert "| run 2 |" in text and "| run 1 |" not in text
    assert text.count(END_OF_GENERATED) == 1
    assert text.index("| run 2 |") < text.index(END_OF_GENERATED) \
        < text.index("A profile written by hand.") < text.index("## Later")
    assert "other text" in text and "later text" in text


def test_a_section_written_before_the_marker_keeps_its_whole_text(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Scale\n\n| old run |\n\nEight rounds of profile.\n"
                   "\n## Later\n\nlater text\n")
    write_section("## Scale", "## Scale\n\n| new run |\n", doc)
    text = doc.read_text()
    assert text.count("## Scale") == 1
    assert text.index("| new run |") < text.index(END_OF_GENERATED) \
        < text.index("| old run |") < text.index("Eight rounds of profile.") \
        < text.index("## Later")
