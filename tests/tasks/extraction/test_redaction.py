"""What the llm and command extractors send is redacted, checked where it arrives.

The llm extractor talks to a real fake OpenAI-compatible server on 127.0.0.1 (the one of
``test_llm``); the command extractor runs a real child process that writes down its stdin.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.http_json import Connection
from storage.kernel.settings import RedactionSettings
from storage.kernel.shards import Scope
from storage.pseudonyms import Pseudonyms
from storage.redaction import RedactionPolicy
from storage.server.engine import Store
from tasks.extraction import CommandExtractor, LLMExtractor
from tasks.files import FlushOutcome
from tasks.sync import SyncContext, SyncWork, build_report, plan_sync, process_batch
from tests.helpers import add_session, chat
from tests.local_http import serving
from tests.tasks.extraction.test_llm import (
    MODEL,
    FakeChat,
    Step,
    _handler,
    completion,
    good_reply,
    state_of,
)

# Every category, twice for the email (two spellings), in four languages.
PLANTED = {
    "EMAIL": "alice.martin@example.com",
    "PHONE": "+49 30 12345678",
    "CARD": "4111 1111 1111 1111",
    "IBAN": "DE89 3704 0044 0532 0130 00",
    "IP": "192.168.1.20",
    "ADDRESS": "Hauptstraße 5",
    "TICKET": "TCK-123456",
}
TURNS = [
    ("user", "Alice", f"Mail me at {PLANTED['EMAIL']} or call {PLANTED['PHONE']}."),
    ("assistant", "aria", "Noted. Which card should I use?"),
    ("user", "Alice", f"Card {PLANTED['CARD']}, refunds to IBAN {PLANTED['IBAN']}."),
    ("user", "Alice", f"The NAS is {PLANTED['IP']}; ship to {PLANTED['ADDRESS']}, 10115 Berlin."),
    ("user", "Alice", "Ticket TCK-123456. Again: ALICE.MARTIN@example.com, not bob@example.com."),
    ("user", "Alice", "Appelez le 06 12 34 56 78 ou écrivez au 12 rue de la Paix."),
    ("user", "Alice", "Version 1.2.3.4 shipped on 2024-03-15 at 14:30 for 1 234 567 €."),
]
POLICY = RedactionPolicy.from_settings(RedactionSettings(custom=["TICKET=TCK-\\d{6}"]))


@pytest.fixture
def chat_server() -> Iterator[FakeChat]:
    fake = FakeChat()
    with serving(_handler(fake)) as base:
        fake.url = f"{base}/v1"
        yield fake


def llm(url: str, policy: RedactionPolicy = POLICY) -> LLMExtractor:
    connection = Connection(client=httpx.Client(), sleep=lambda _: None, max_retries=0)
    return LLMExtractor(url, MODEL, connection=connection, redaction=policy)


def test_the_server_receives_no_planted_value_and_consistent_placeholders(
    chat_server: FakeChat,
) -> None:
    chat_server.script = [Step()]
    state = state_of(TURNS)
    state = state.model_copy(
        update={"session": state.session.model_copy(update={"title": PLANTED["EMAIL"]})}
    )

    result = llm(chat_server.url).extract(state)

    sent = json.dumps(chat_server.bodies[0], ensure_ascii=False)
    prompt = chat_server.bodies[0]["messages"][1]["content"]
    assert [v for v in PLANTED.values() if v in sent] == []
    assert "alice.martin" not in sent.lower() and "06 12 34 56 78" not in sent
    assert "[m0] Alice (user): Mail me at <EMAIL_1> or call <PHONE_1>." in prompt
    assert "Card <CARD_1>, refunds to IBAN <IBAN_1>." in prompt
    assert "The NAS is <IP_1>; ship to <ADDRESS_1>." in prompt
    # The same address in another spelling is the same placeholder; another one is not.
    assert "Ticket <TICKET_1>. Again: <EMAIL_1>, not <EMAIL_2>." in prompt
    assert "Appelez le <PHONE_2> ou écrivez au <ADDRESS_2>." in prompt
    assert "Version 1.2.3.4 shipped on 2024-03-15 at 14:30 for 1 234 567 €." in prompt
    assert result.redactions == {
        "address": 2,
        "card": 1,
        "email": 4,  # the title's too
        "iban": 1,
        "ip": 1,
        "phone": 2,
        "ticket": 1,
    }


def test_placeholders_in_the_reply_are_restored_locally(chat_server: FakeChat) -> None:
    fact = {"kind": "fact", "content": "Alice's email is <EMAIL_1>, ship to <ADDRESS_1>."}
    reply = good_reply(summary="Alice gave <EMAIL_1> and <PHONE_9>.", facts=[fact])
    chat_server.script = [Step(body=completion(reply))]

    result = llm(chat_server.url).extract(state_of(TURNS))

    assert result.episode.summary == f"Alice gave {PLANTED['EMAIL']} and <PHONE_9>."
    [memory] = [m for m in result.memories if m.kind == "fact"]
    assert memory.content == (
        f"Alice's email is {PLANTED['EMAIL']}, ship to {PLANTED['ADDRESS']}, 10115 Berlin."
    )


def test_with_redaction_before_storage_memories_keep_the_placeholders(
    chat_server: FakeChat,
) -> None:
    reply = good_reply(summary="Alice gave <EMAIL_1>.")
    chat_server.script = [Step(body=completion(reply))]
    policy = RedactionPolicy.from_settings(RedactionSettings(before_storage=True))

    result = llm(chat_server.url, policy).extract(state_of(TURNS))

    assert result.episode.summary == "Alice gave <EMAIL_1>."


def test_turned_off_the_server_gets_the_text_as_is(chat_server: FakeChat) -> None:
    chat_server.script = [Step()]
    off = RedactionPolicy.from_settings(RedactionSettings(enabled=False))

    result = llm(chat_server.url, off).extract(state_of(TURNS))

    assert PLANTED["CARD"] in chat_server.bodies[0]["messages"][1]["content"]
    assert result.redactions == {}


def test_counts_reach_the_sync_report_and_no_value_reaches_a_log_or_report(
    store: Store, chat_server: FakeChat, caplog: pytest.LogCaptureFixture
) -> None:
    start = state_of(TURNS).messages[0].timestamp
    add_session(store, "trip", "alice", chat(start, *(t[2] for t in TURNS)))
    chat_server.script = [Step(status=500, body="the model echoes " + TURNS[0][2])]
    as_of = start + timedelta(hours=2)
    ctx = SyncContext(
        extractor=llm(chat_server.url),
        embedder=HashingEmbedder(store.settings.embedding.dim),
        as_of=as_of,
        tz=store.settings.tz,
        run_id=None,
    )
    with Session(store.engine) as session:
        plan = plan_sync(session, as_of, 26, 2, None)
    with caplog.at_level(logging.DEBUG), Session(store.engine) as session, session.begin():
        written = process_batch(session, ctx, plan.to_process)

    work = SyncWork(written, FlushOutcome(), FlushOutcome())
    report = build_report("memory-sync-daily", plan, Scope(), work, as_of, Pseudonyms())
    assert written.extractor_fallbacks == 1 and "failed on session" in caplog.text
    assert report.as_dict()["written"]["redactions"]["card"] == 1
    assert "| extractor: values redacted from what it sent | address 2, card 1, email 3" in (
        report.markdown()
    )
    shown = caplog.text + report.markdown() + json.dumps(report.as_dict())
    assert [v for v in PLANTED.values() if v in shown] == []


ECHO = """
import json, pathlib, sys
state = json.load(sys.stdin)
pathlib.Path(sys.argv[1]).write_text(json.dumps(state), encoding="utf-8")
reply = REPLY
reply["facts"] = [{"kind": "fact", "content": "Card: <CARD_1>", "message_ids": ["m2"]}]
print(json.dumps(reply))
"""


def test_the_command_extractor_gets_redacted_input_and_restores_its_reply(
    tmp_path: Path,
) -> None:
    program = tmp_path / "echo.py"
    program.write_text(ECHO.replace("REPLY", repr(good_reply())), encoding="utf-8")
    seen = tmp_path / "seen.json"

    result = CommandExtractor(
        [sys.executable, str(program), str(seen)], timeout=30, redaction=POLICY
    ).extract(state_of(TURNS))

    stdin = seen.read_text(encoding="utf-8")
    assert [v for v in PLANTED.values() if v in stdin] == []
    assert json.loads(stdin)["messages"][2]["content"] == "Card <CARD_1>, refunds to IBAN <IBAN_1>."
    [fact] = [m for m in result.memories if m.kind == "fact"]
    assert fact.content == f"Card: {PLANTED['CARD']}"
    assert result.redactions["card"] == 1
