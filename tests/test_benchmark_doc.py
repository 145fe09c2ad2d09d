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


def test_a_script_naming_a_work_item_writes_the_report_section(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## SafeLAD\n\nmethod\n\n## SafeLAD with a kernel\n\nk\n")
    write_section("## SafeLAD (issue 4)", "## SafeLAD (issue 4)\n\n| run |\n", doc)
    text = doc.read_text()
    assert "issue" not in text and text.count("## SafeLAD\n") == 1
    assert text.index("| run |") < text.index("method") < text.index("## SafeLAD with")
    assert text.count("| run |") == 1 and "\nk\n" in text


DOC = Path(__file__).resolve().parents[1] / "doc" / "benchmarks.md"


def test_the_report_is_a_report():
    """Short, the summary first, the generated block in place, no work items named,
    and every figure it shows present."""
    import re

    from run import END, START

    text = DOC.read_text()
    assert len(text.splitlines()) < 800
    headings = re.findall(r"^## (.*)$", text, re.MULTILINE)
    assert headings[0] == "Summary"
    assert text.index("## Summary") < text.index(START) < text.index(END) \
        < text.index(f"## {headings[1]}")
    assert not re.search(r"\bissues? \d", text, re.IGNORECASE)
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert figures
    for figure in figures:
        assert (DOC.parent / figure).is_file(), figure


def test_the_generated_summary_replaces_only_its_block(tmp_path):
    from run import END, START, write_doc

    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# B\n\n## Summary\n\nhand\n\n{START}\n\nold\n\n{END}\n\n## Next\n")
    write_doc("| new |", doc)
    write_doc("| newer |", doc)
    text = doc.read_text()
    assert "old" not in text and "| new |" not in text and text.count("| newer |") == 1
    assert text.index("hand") < text.index(START) < text.index("| newer |") \
        < text.index(END) < text.index("## Next")
