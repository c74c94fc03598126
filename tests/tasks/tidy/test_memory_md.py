"""What a purge leaves of MEMORY.md and where it finds a moved log (pure)."""

from __future__ import annotations

from tasks.tidy import Line, archived_path, render, without_entries

HEAD = "# Long-term memory · alice · week of 2026-11-16"


def test_the_entries_lines_go_and_a_section_they_empty_goes_with_its_title() -> None:
    lines = [
        Line("Preferences", "- Prefers window seats <!-- m:12 -->"),
        Line("Decisions", "- Book TAP <!-- m:13 -->"),
        Line("Decisions", "- Book TAP for Lisbon <!-- m:14 -->"),
    ]
    document = render(HEAD, lines)

    assert without_entries(document, ["Prefers window seats"]) == render(HEAD, lines[1:])
    assert without_entries(document, ["Book TAP"]) == render(HEAD, [lines[0], lines[2]])
    assert without_entries(document, []) == document
    assert without_entries(
        document, ["Prefers window seats", "Book TAP", "Book TAP for Lisbon"]
    ) == (HEAD + "\n")


def test_a_log_is_found_where_the_tidy_moves_it() -> None:
    assert archived_path("alice/memory/2026-11-18.md") == "alice/memory/archive/2026/2026-11-18.md"
    assert archived_path("alice/memory/tasks/2026-11-18.md") == (
        "alice/memory/archive/2026/tasks/2026-11-18.md"
    )
    assert archived_path("alice/timeline.jsonl") is None
    assert archived_path("alice/memory/weekly/2026-11-16.md") is None
