"""search, prime and index as a user runs them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from click.testing import CliRunner

from deployments.cli import main
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_search_prints_a_table_and_the_breakdown(env: Settings) -> None:
    store = open_store(env)
    [dentist, _] = put(
        store, "alice", ["Dentist appointment moved to Tuesday 9am", "Buy oat milk"], NOW
    )

    result = CliRunner().invoke(
        main,
        [
            "search",
            "alice",
            "dentist appointment",
            "--explain",
            "--limit",
            "1",
            "--as-of",
            "2026-11-20T12:00:00",
        ],
    )

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["cite", "score", "kind", "when", "memory"]
    assert lines[1].startswith("[Memory 1]  ")
    assert lines[1].endswith("2026-11-20 12:00 Dentist appointment moved to Tuesday 9am")
    assert "1*semantic(" in result.output and "0.05*importance(" in result.output
    assert "Buy oat milk" not in result.output
    assert lines[-2:] == [
        "",
        f"Sources: [Memory 1] memory {dentist} (messages m0, 2026-11-20 12:00 UTC)",
    ]


def test_explain_shows_the_time_the_question_names_and_what_it_changed(env: Settings) -> None:
    store = open_store(env)
    put(store, "alice", ["Dentist appointment moved to Tuesday"], NOW - timedelta(days=40))
    [recent] = put(store, "alice", ["Dentist appointment moved to Friday"], NOW - timedelta(days=8))
    as_of = ["--as-of", "2026-11-20T12:00:00", "--explain", "--no-record"]

    last_week = CliRunner().invoke(
        main, ["search", "alice", "dentist appointment last week", *as_of]
    )
    now = CliRunner().invoke(
        main, ["search", "alice", "when is my dentist appointment now?", *as_of]
    )

    assert last_week.exit_code == 0 and now.exit_code == 0, last_week.output + now.output
    lines = last_week.output.splitlines()
    assert lines[0] == (
        'time window "last week": 2026-11-09 to 2026-11-15: memories from then ranked higher'
    )
    assert lines[2].endswith("Dentist appointment moved to Friday")  # 8 days back: inside
    assert "0.5*window(1.000)" in last_week.output and "0.5*window(0.000)" in last_week.output
    breakdowns = " ".join(line.strip() for line in lines)  # wrapped under each hit
    assert breakdowns.count('window "last week": 2026-11-09 to 2026-11-15') == 3
    assert now.output.splitlines()[0] == (
        "about now: an older memory ranks after a newer one that restates it"
    )
    assert "time window" not in now.output


def test_search_lists_its_sources_one_per_line_under_the_first(env: Settings) -> None:
    store = open_store(env)
    ids = put(store, "alice", ["Dentist on Tuesday", "Dentist bill paid", "Dentist is Moreau"], NOW)

    result = CliRunner().invoke(
        main, ["search", "alice", "dentist", "--as-of", "2026-11-20T12:00:00", "--no-record"]
    )

    assert result.exit_code == 0, result.output
    tail = result.output.splitlines()[-3:]
    assert [line[:18] for line in tail] == [
        "Sources: [Memory 1",
        "         [Memory 2",
        "         [Memory 3",
    ]
    assert tail[0].endswith(";") and tail[1].endswith(";") and not tail[2].endswith(";")
    cited = {int(line.split(" memory ")[1].split()[0]) for line in tail}
    assert cited == set(ids)


def test_search_errors_are_one_line(env: Settings) -> None:
    runner = CliRunner()
    empty = runner.invoke(main, ["search", "alice", "  "])
    weights = runner.invoke(main, ["search", "alice", "x", "--weights", "semantic=lots"])
    assert empty.exit_code == 1 and "Error: empty query" in empty.output
    assert weights.exit_code == 1 and "cannot parse weight 'semantic=lots'" in weights.output
    many = runner.invoke(main, ["search", "alice", "x", "--limit", "500"])
    assert many.exit_code == 1 and many.output == (
        "Error: limit 500 out of range 1..100 (ARCHIVIST_RETRIEVAL__MAX_LIMIT)\n"
    )
    usage = " ".join(runner.invoke(main, ["search", "--help"]).output.split())
    assert "at most ARCHIVIST_RETRIEVAL__MAX_LIMIT (100 unless set)" in usage


def test_prime_and_index(env: Settings) -> None:
    store = open_store(env)
    put(
        store,
        "alice",
        [f"I prefer window seat number {i}" for i in range(120)],
        NOW,
        kind="preference",
        importance=0.9,
    )
    runner = CliRunner()

    primed = runner.invoke(main, ["prime", "alice", "booking a flight"])
    indexed = runner.invoke(main, ["index", "--min-rows", "100"])

    assert primed.exit_code == 0 and "Things I know:" in primed.output
    assert "- [Memory 1] I prefer window seat number" in primed.output
    assert primed.output.splitlines()[-1].startswith("Sources: [Memory 1] memory ")
    assert indexed.exit_code == 0, indexed.output
    assert "120 rows indexed in 1 namespaces of >= 100 rows" in indexed.output


LONG = (
    "Dentist appointment. Alice needs to move their appointment with Dr. Moreau, the one on "
    "Tuesday. Alice: Anything after 4pm next week. Mornings are impossible with work. Aria: "
    "The practice has Wednesday at 16:30 or Thursday at 17:15. Alice: Wednesday at 16:30. "
    "Aria: Booked: Dr. Moreau, Wednesday 16:30. Aria will remind you the day before. Aria: "
    "They asked whether you still have the sensitivity in the lower left molar. Alice: Mostly "
    "with cold drinks. Aria will add that to the appointment note so Dr. Moreau can check it."
)


def test_search_shows_the_passage_and_full_the_whole_memory(env: Settings) -> None:
    put(open_store(env), "alice", [LONG], NOW, kind="episode")
    args = ["search", "alice", "when is the dentist?", "--as-of", "2026-11-20T12:00:00"]

    passage = CliRunner().invoke(main, [*args, "--no-record"])
    full = CliRunner().invoke(main, [*args, "--no-record", "--full"])

    assert passage.exit_code == 0 and full.exit_code == 0, (passage.output, full.output)
    shown = " ".join(passage.output.split("Sources:")[0].split())
    assert "Booked: Dr. Moreau, Wednesday 16:30." in shown and "molar" not in shown
    assert "lower left molar" in " ".join(full.output.split())


def test_search_and_prime_within_a_token_budget(env: Settings) -> None:
    from storage.embedding import count_tokens

    put(
        open_store(env), "alice", [f"Dentist note {i}: bring the x-ray {i}" for i in range(40)], NOW
    )
    args = ["search", "alice", "dentist x-ray", "--as-of", "2026-11-20T12:00:00", "--no-record"]

    fitted = CliRunner().invoke(main, [*args, "--budget-tokens", "150"])
    primed = CliRunner().invoke(main, ["prime", "alice", "dentist", "--budget-tokens", "90"])
    refused = CliRunner().invoke(main, [*args, "--budget-tokens", "0"])

    assert fitted.exit_code == 0, fitted.output
    context, _, tail = fitted.output.rstrip("\n").rpartition("\n\n")
    used, budget = int(tail.split()[0]), int(tail.split()[2])
    assert budget == 150 and 0 < used <= 150 and used == count_tokens([context])[0]
    assert "more passed over" in tail and context.splitlines()[0].startswith("[Memory 1] ")
    assert primed.exit_code == 0 and primed.output.rstrip().endswith("of 90 tokens")
    assert refused.exit_code == 2 and "a token budget must be 1 to 100000" in refused.output
