"""Round 55 of planted bugs, first part: rounds 27 and 28's plants outside neurobrix/tables.py and schema.py (the
printable class, the stop strings, kernel-mutant round 4's judges, the gate's layout and report, the decay penalty,
the error lines), run again on today's code by tests/planted57_driver.py (``--again``). Each case here closes one that
its tests and its round's file no longer catch: it fails with the plant named in its docstring and passes on the
clean code.

Outcomes: docs/planted-bugs.md, round 55.
"""

from __future__ import annotations

from gate import layout

DIST_INFO = "neurobrix-0.1.0.dist-info"


def test_a_root_member_of_the_own_dist_info_is_not_described_as_written_through_data():
    """Round 27's g01 (every member of the project's own .dist-info described as one a .data folder writes there):
    a top_level.txt at the wheel's root is outside the package, and no .data member writes it; the same file through
    .data/purelib is."""
    root = layout._describe(f"{DIST_INFO}/top_level.txt", None, "", DIST_INFO)
    assert "outside the package" in root and "from a member the checks of it do not see" not in root, root
    through = layout._describe(f"neurobrix-0.1.0.data/purelib/{DIST_INFO}/top_level.txt", None, "", DIST_INFO)
    assert f"into the project's own {DIST_INFO}/" in through and "outside the package" not in through, through
