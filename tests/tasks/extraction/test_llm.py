"""The llm extractor against a real local fake OpenAI-compatible server (and MockTransport)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import text
from sqlalchemy.orm import Session

from storage.embedding import HashingEmbedder
from storage.kernel.errors import ConfigurationError
from storage.kernel.http_json import Connection
from storage.kernel.records import MessageRecord, SessionKind, SessionRecord, SessionState
from storage.kernel.settings import ExtractorSettings, Settings
from storage.kernel.shards import Scope
from storage.pseudonyms import Pseudonyms
from storage.server.engine import Store
from tasks.extraction import (
    CommandExtractor,
    HeuristicExtractor,
    LLMExtractor,
    NoneExtractor,
    make_extractor,
)
from tasks.files import FlushOutcome
from tasks.sync import SyncContext, SyncWork, build_report, plan_sync, process_batch
from tests.helpers import add_session, chat
from tests.local_http import serving

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
KEY = "sk-test-secret-123"
MODEL = "test-model"

TURNS = [
    ("user", "Alice", "I'm planning the Lisbon trip for March, can you help with hotels?"),
    ("assistant", "aria", "Sure. We decided on Alfama, close to the tram line."),
    ("user", "Alice", "I prefer quiet rooms, I sleep badly with street noise."),
    ("assistant", "aria", "Noted. I will send three quiet options by Friday."),
]


def state_of(
    turns: list[tuple[str, str, str]], kind: SessionKind = "direct", sid: str = "s1"
) -> SessionState:
    """A session from (role, speaker, content) triples, one minute apart, ids m0, m1, ..."""
    messages = tuple(
        MessageRecord(
            id=f"m{i}",
            role=role,
            speaker=speaker,
            content=body,
            timestamp=T0 + timedelta(minutes=i),
        )
        for i, (role, speaker, body) in enumerate(turns)
    )
    session = SessionRecord(id=sid, namespace="alice", agent="aria", kind=kind)
    return SessionState(session=session, messages=messages, fingerprint="f")


def good_reply(**overrides: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "summary": "Alice and aria planned the Lisbon trip. They chose Alfama.",
        "topics": ["lisbon", "hotels"],
        "entities": ["Lisbon", "Alfama"],
        "user_state": {"mood": "hopeful", "confidence": "certain", "focus": "quiet hotel"},
        "outcomes": [{"type": "decision", "content": "Stay in Alfama.", "message_ids": ["m1"]}],
        "open_threads": [
            {
                "topic": "hotel options",
                "status": "promised",
                "context": "aria sends three quiet options by Friday.",
                "message_ids": ["m3", "m42"],
            }
        ],
        "importance": 0.8,
        "urgency": 0.4,
        "sentiment": 0.5,
        "risk": 0.0,
        "facts": [
            {
                "kind": "preference",
                "content": "Alice prefers quiet hotel rooms.",
                "message_ids": ["[m2]", "ghost"],
                "importance": 0.9,
            },
            {"kind": "fact", "content": "Alice travels to Lisbon in March.", "message_ids": []},
        ],
    }
    return reply | overrides


def completion(content: str | dict[str, Any], prompt: int = 100, out: int = 20) -> dict[str, Any]:
    """A chat-completions body whose message is ``content`` (dicts are sent as JSON text)."""
    body = content if isinstance(content, str) else json.dumps(content)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": body}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
    }


@dataclass
class Step:
    """One scripted answer of the fake server."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=lambda: completion(good_reply()))
    delay: float = 0.0


@dataclass
class FakeChat:
    """What the fake server answers next, and what it was sent."""

    url: str = ""
    script: list[Step] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)


def _handler(fake: FakeChat) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers["Content-Length"])
            fake.bodies.append(json.loads(self.rfile.read(length)))
            fake.auth.append(self.headers.get("Authorization"))
            if self.path != "/v1/chat/completions":
                return self._send(404, {"error": "not found"})
            step = fake.script.pop(0) if fake.script else Step(500, "script exhausted")
            time.sleep(step.delay)
            self._send(step.status, step.body)

        def _send(self, status: int, body: dict[str, Any] | str) -> None:
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left, as the timeout test intends

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def fake_chat() -> Iterator[FakeChat]:
    """A real OpenAI-compatible chat server on 127.0.0.1, scripted per test."""
    fake = FakeChat()
    with serving(_handler(fake)) as base:
        fake.url = f"{base}/v1"
        yield fake


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as http:
        yield http


def extractor(
    url: str, client: httpx.Client, delays: list[float] | None = None, **kwargs: Any
) -> LLMExtractor:
    """The extractor at ``url``; ``kwargs``: its own, and its Connection's."""
    sleep = delays.append if delays is not None else (lambda _: None)
    wire: dict[str, Any] = {"max_retries": 2, "backoff_seconds": (1, 2, 4, 8), "timeout": 60.0}
    wire |= {k: kwargs.pop(k) for k in ("max_retries", "backoff_seconds", "timeout") if k in kwargs}
    connection = Connection(api_key=KEY, client=client, sleep=sleep, **wire)
    return LLMExtractor(url, MODEL, connection=connection, **kwargs)


def test_happy_path_maps_the_reply_and_records_tokens(
    fake_chat: FakeChat, client: httpx.Client
) -> None:
    fake_chat.script = [Step(body=completion(good_reply(importance=1.7, sentiment=-3)))]
    state = state_of(TURNS)

    result = extractor(fake_chat.url, client).extract(state)

    episode = result.episode
    assert episode.summary == "Alice and aria planned the Lisbon trip. They chose Alfama."
    assert episode.topics == ("lisbon", "hotels") and episode.entities == ("Lisbon", "Alfama")
    assert episode.user_state == {
        "confidence": "certain",
        "focus": "quiet hotel",
        "mood": "hopeful",
    }
    assert [(o.type, o.message_ids) for o in episode.outcomes] == [("decision", ("m1",))]
    assert [(t.status, t.message_ids) for t in episode.open_threads] == [("promised", ("m3",))]
    # clipped to the ranges; vehemence = 0.5 urgency + 0.3 |sentiment| + 0.2 risk
    assert (episode.importance, episode.sentiment, episode.urgency) == (1.0, -1.0, 0.4)
    assert episode.vehemence == pytest.approx(0.5 * 0.4 + 0.3 * 1.0)
    facts = {m.content: m for m in result.memories if m.kind != "turn"}
    quiet, march = (
        facts["Alice prefers quiet hotel rooms."],
        facts["Alice travels to Lisbon in March."],
    )
    assert (quiet.kind, quiet.message_ids, quiet.occurred_at) == (
        "preference",
        ("m2",),
        T0 + timedelta(minutes=2),
    )
    assert (march.message_ids, march.occurred_at) == ((), state.messages[-1].timestamp)
    assert quiet.importance == 0.9
    heuristic_turns = [m for m in HeuristicExtractor().extract(state).memories if m.kind == "turn"]
    assert [m for m in result.memories if m.kind == "turn"] == heuristic_turns
    assert result.tokens == {"prompt": 100, "completion": 20, "llm_calls": 1, "fallback": 0}
    assert extractor(fake_chat.url, client).name == "llm:test-model"


def test_request_is_one_json_mode_chat_call_with_the_transcript(
    fake_chat: FakeChat, client: httpx.Client
) -> None:
    fake_chat.script = [Step()]
    extractor(fake_chat.url + "/", client).extract(state_of(TURNS))

    [body] = fake_chat.bodies
    assert body["model"] == MODEL and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system["role"] == "system" and "open_threads" in system["content"]
    assert user["content"].splitlines()[0] == f"[m0] Alice (user): {TURNS[0][2]}"
    assert fake_chat.auth == [f"Bearer {KEY}"]


def test_malformed_reply_is_retried_and_tokens_sum_over_both_calls(
    fake_chat: FakeChat, client: httpx.Client
) -> None:
    fenced = "```json\n" + json.dumps(good_reply()) + "\n```"
    fake_chat.script = [Step(body=completion("{not json", 50, 5)), Step(body=completion(fenced))]
    delays: list[float] = []

    result = extractor(fake_chat.url, client, delays, backoff_seconds=(0.5, 3)).extract(
        state_of(TURNS)
    )

    assert result.episode.summary.startswith("Alice and aria planned")
    assert result.tokens == {"prompt": 150, "completion": 25, "llm_calls": 2, "fallback": 0}
    assert delays == [0.5]


def test_malformed_twice_falls_back_to_the_heuristic(
    fake_chat: FakeChat, client: httpx.Client
) -> None:
    wrong_schema = good_reply(outcomes=[{"type": "vote", "content": "x"}])
    fake_chat.script = [
        Step(body=completion("no json at all", 40, 4)),
        Step(body=completion(wrong_schema, 40, 4)),
    ]
    state = state_of(TURNS, kind="subagent")

    result = extractor(fake_chat.url, client, max_retries=1).extract(state)

    heuristic = HeuristicExtractor().extract(state)
    assert result.episode.summary == heuristic.episode.summary
    assert replace(result, tokens={}) == heuristic
    assert result.tokens == {"prompt": 80, "completion": 8, "llm_calls": 2, "fallback": 1}


def test_timeouts_are_retried_with_backoff_then_fall_back(
    fake_chat: FakeChat, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    fake_chat.script = [Step(delay=0.6) for _ in range(3)]
    delays: list[float] = []
    state = state_of(TURNS)

    result = extractor(
        fake_chat.url, client, delays, timeout=0.1, backoff_seconds=(1, 2, 4)
    ).extract(state)

    assert delays == [1, 2]  # max_retries=2: three requests, two waits
    assert result.episode == HeuristicExtractor().extract(state).episode
    assert result.tokens == {"prompt": 0, "completion": 0, "llm_calls": 3, "fallback": 1}
    assert "s1" in caplog.text and "ReadTimeout" in caplog.text


def test_rate_limit_waits_as_the_server_says() -> None:
    replies = [
        httpx.Response(429, headers={"Retry-After": "7"}),
        httpx.Response(200, json=completion(good_reply())),
    ]
    delays: list[float] = []
    client = httpx.Client(transport=httpx.MockTransport(lambda _: replies.pop(0)))

    result = extractor("http://llm.test/v1", client, delays).extract(state_of(TURNS))

    assert delays == [7.0] and result.tokens["fallback"] == 0


@pytest.mark.parametrize("status", [401, 403, 404])
def test_misconfiguration_raises_at_once_without_leaking_the_key(status: int) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(status, text=f"bad key {KEY}")

    llm = extractor("http://llm.test/v1", httpx.Client(transport=httpx.MockTransport(handler)))
    with pytest.raises(ConfigurationError, match=f"HTTP {status}") as error:
        llm.extract(state_of(TURNS))
    assert len(sent) == 1 and KEY not in str(error.value)


def test_401_from_the_real_server(fake_chat: FakeChat, client: httpx.Client) -> None:
    fake_chat.script = [Step(401, {"error": {"message": "invalid api key"}})]
    with pytest.raises(ConfigurationError, match="ARCHIVIST_EXTRACTOR__API_KEY"):
        extractor(fake_chat.url, client).extract(state_of(TURNS))


def test_long_sessions_are_cut_from_the_start(fake_chat: FakeChat, client: httpx.Client) -> None:
    turns = [
        (
            "user" if i % 2 == 0 else "assistant",
            "Alice" if i % 2 == 0 else "aria",
            f"message number {i} " + "x" * 80,
        )
        for i in range(60)
    ]
    fake_chat.script = [Step()]

    extractor(fake_chat.url, client, max_input_chars=1000).extract(state_of(turns))

    sent = fake_chat.bodies[0]["messages"][1]["content"]
    assert len(sent) <= 1000
    assert "[m59] aria (assistant): message number 59" in sent
    assert "[m0]" not in sent and sent.startswith("[earlier messages omitted]\n[m")


def test_factory_builds_each_mode() -> None:
    llm = ExtractorSettings(
        mode="llm", base_url="http://llm.test/v1", model=MODEL, api_key=SecretStr(KEY)
    )
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return httpx.Response(200, json=completion(good_reply()))

    built = make_extractor(
        Settings(extractor=llm), client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    assert built.name == "llm:test-model"
    assert built.extract(state_of(TURNS)).tokens["llm_calls"] == 1 and seen == [f"Bearer {KEY}"]
    command = ExtractorSettings(mode="command", command=["summarise", "--json"])
    assert isinstance(make_extractor(Settings(extractor=command)), CommandExtractor)
    assert isinstance(
        make_extractor(Settings(extractor=ExtractorSettings(mode="none"))), NoneExtractor
    )
    assert isinstance(make_extractor(Settings()), HeuristicExtractor)


def test_daily_sync_step_writes_the_llm_episode_and_counts_tokens(
    store: Store, fake_chat: FakeChat, client: httpx.Client
) -> None:
    start = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    add_session(store, "trip", "alice", chat(start, *(t[2] for t in TURNS)))
    fake_chat.script = [Step(body=completion(good_reply(), prompt=321, out=54))]
    as_of = start + timedelta(hours=2)
    ctx = SyncContext(
        extractor=extractor(fake_chat.url, client),
        embedder=HashingEmbedder(store.settings.embedding.dim),
        as_of=as_of,
        tz=store.settings.tz,
        run_id=None,
    )
    with Session(store.engine) as session:
        plan = plan_sync(session, as_of, 26, 2, None)
    with Session(store.engine) as session, session.begin():
        written = process_batch(session, ctx, plan.to_process)

    with store.engine.connect() as conn:
        summary, extractor_name = conn.execute(
            text("SELECT summary, extractor FROM episodes")
        ).one()
        facts = conn.execute(
            text("SELECT content, message_ids FROM memories WHERE kind = 'preference'")
        ).all()
    assert summary == good_reply()["summary"] and extractor_name == "llm:test-model"
    assert [tuple(f) for f in facts] == [("Alice prefers quiet hotel rooms.", ["m2"])]
    assert (written.prompt_tokens, written.completion_tokens) == (321, 54)
    assert (written.llm_calls, written.extractor_fallbacks) == (1, 0)
    work = SyncWork(written, FlushOutcome(), FlushOutcome())
    report = build_report("memory-sync-daily", plan, Scope(), work, as_of, Pseudonyms())
    assert (
        "| extractor: calls / fallbacks / tokens in / out | 1 / 0 / 321 / 54 |" in report.markdown()
    )
    assert report.as_dict()["written"]["prompt_tokens"] == 321
