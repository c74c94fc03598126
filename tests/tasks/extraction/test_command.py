"""The command extractor with real child processes, and the ``none`` extractor."""

from __future__ import annotations

import json
import logging
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from storage.kernel.errors import ConfigurationError
from tasks.extraction import CommandExtractor, HeuristicExtractor, NoneExtractor
from tests.tasks.extraction.test_llm import T0, TURNS, good_reply, state_of

# Reads the session JSON, answers with a reply built from it.
ECHO = """
import json, sys
state = json.load(sys.stdin)
messages = state["messages"]
reply = REPLY
reply["summary"] = "%d messages of %s by %s, first %s, last %s, fingerprint %s." % (
    len(messages), state["session"]["id"], messages[-1]["speaker"], messages[0]["id"],
    messages[-1]["id"], state["fingerprint"])
reply["facts"] = [{"kind": "fact", "content": "Last said: " + messages[-1]["content"][:40],
                   "message_ids": [messages[-1]["id"]]}]
print("```json\\n" + json.dumps(reply) + "\\n```")
"""


def script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return [sys.executable, str(path)]


def test_a_valid_reply_is_used(tmp_path: Path) -> None:
    argv = script(tmp_path, "echo.py", ECHO.replace("REPLY", repr(good_reply())))
    state = state_of(TURNS)

    result = CommandExtractor(argv, timeout=30).extract(state)

    assert result.episode.summary == "4 messages of s1 by aria, first m0, last m3, fingerprint f."
    assert result.episode.topics == ("lisbon", "hotels")
    [fact] = [m for m in result.memories if m.kind == "fact"]
    assert fact.message_ids == ("m3",) and fact.occurred_at == T0 + timedelta(minutes=3)
    heuristic = HeuristicExtractor().extract(state)
    assert [m for m in result.memories if m.kind == "turn"] == [
        m for m in heuristic.memories if m.kind == "turn"
    ]
    assert result.tokens == {"fallback": 0}
    assert CommandExtractor(argv).name == f"command:{Path(sys.executable).name} {argv[1]}"[:100]


def test_long_sessions_reach_the_program_cut_from_the_start(tmp_path: Path) -> None:
    argv = script(tmp_path, "echo.py", ECHO.replace("REPLY", repr(good_reply())))
    turns = [("user", "Alice", f"note {i} " + "y" * 200) for i in range(30)]

    result = CommandExtractor(argv, max_input_chars=1000).extract(state_of(turns))

    assert result.episode.summary.endswith("first m26, last m29, fingerprint f.")


@pytest.mark.parametrize(
    ("name", "body", "timeout", "why"),
    [
        ("fails.py", "import sys\nsys.stderr.write('model file missing')\nsys.exit(1)", 30, "exit"),
        ("slow.py", "import time\ntime.sleep(30)", 0.5, "no reply within"),
        ("garbage.py", "print('the summary is: nice chat')", 30, "not JSON"),
        ("schema.py", "print('{\"topics\": []}')", 30, "fails the schema"),
    ],
)
def test_failures_fall_back_to_the_heuristic(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    name: str,
    body: str,
    timeout: float,
    why: str,
) -> None:
    state = state_of(TURNS)
    with caplog.at_level(logging.WARNING, logger="tasks.extraction._command"):
        result = CommandExtractor(script(tmp_path, name, body), timeout=timeout).extract(state)

    heuristic = HeuristicExtractor().extract(state)
    assert result.episode == heuristic.episode and result.memories == heuristic.memories
    assert result.tokens == {"fallback": 1}
    assert "session s1" in caplog.text and why in caplog.text
    if name == "fails.py":
        assert "model file missing" in caplog.text


def test_a_program_that_cannot_start_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="ARCHIVIST_EXTRACTOR__COMMAND"):
        CommandExtractor([str(tmp_path / "missing-program")]).extract(state_of(TURNS))


def test_none_mode_is_a_plain_line_and_the_turns() -> None:
    state = state_of(TURNS, kind="subagent")

    result = NoneExtractor().extract(state)

    episode = result.episode
    assert episode.summary == (
        "4 messages between Alice and aria from 2026-11-20T09:00+00:00 to 2026-11-20T09:03+00:00"
    )
    assert (episode.topics, episode.entities, episode.outcomes, episode.open_threads) == (
        (),
        (),
        (),
        (),
    )
    assert (episode.importance, episode.vehemence) == (0.5, 0.0)
    assert {m.kind for m in result.memories} == {"turn"}
    assert [m.message_ids for m in result.memories] == [("m0",), ("m1",), ("m2",), ("m3",)]
    assert result.task_card is None and result.tokens == {}
    assert NoneExtractor().name == "none"


def test_none_mode_with_one_speaker() -> None:
    state = state_of([("user", "Alice", "Remember that my passport expires in May.")])
    assert NoneExtractor().extract(state).episode.summary == (
        "1 message by Alice from 2026-11-20T09:00+00:00 to 2026-11-20T09:00+00:00"
    )


def test_payload_shape(tmp_path: Path) -> None:
    dump = tmp_path / "payload.json"
    body = f"import sys, pathlib\npathlib.Path({str(dump)!r}).write_text(sys.stdin.read())\n"
    CommandExtractor(script(tmp_path, "dump.py", body)).extract(state_of(TURNS))

    payload = json.loads(dump.read_text())
    assert set(payload) == {"session", "messages", "fingerprint"}
    assert payload["session"]["id"] == "s1" and payload["fingerprint"] == "f"
    assert payload["messages"][0] == {
        "id": "m0",
        "role": "user",
        "speaker": "Alice",
        "content": TURNS[0][2],
        "timestamp": "2026-11-20T09:00:00+00:00",
    }
