"""The eval: metric math on hand-made hits, the input readers, and one run on the labelled set."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from storage.embedding import make_embedder
from storage.kernel.errors import InputError
from storage.kernel.scoring import PRESETS
from storage.retrieval import Hit, Retriever
from storage.server.engine import Store
from tasks.evaluation import (
    OVERALL,
    EvalInputs,
    EvalQuery,
    GroupSummary,
    build_memory,
    check_evidence,
    check_namespaces,
    day_run,
    load_inputs,
    percentile,
    read_queries,
    read_sessions,
    render_table,
    run_queries,
    score_question,
    summarise,
)
from tests.helpers import add_session, chat

DATA = Path(__file__).parents[2] / "data" / "eval"
KS = (1, 5, 10)
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def hit(kind: str, session: str | None, *messages: str, namespace: str = "alice") -> Hit:
    return Hit(
        memory_id=0,
        namespace=namespace,
        kind=kind,
        content="",
        score=0.0,
        factors={},
        weights={},
        occurred_at=T0,
        created_at=T0,
        session_id=session,
        message_ids=messages,
        tier="fresh",
    )


def query(
    messages: Sequence[str] = (), sessions: Sequence[str] = (), category: str = "single-hop"
) -> EvalQuery:
    return EvalQuery(
        id="q",
        namespace="alice",
        question="?",
        asked_at=T0,
        category=category,
        evidence_message_ids=tuple(messages),
        evidence_session_ids=tuple(sessions),
    )


# --- metric math ---------------------------------------------------------------------------


def test_message_recall_counts_cited_evidence_and_ignores_session_summaries() -> None:
    hits = [
        hit("episode", "s1", "m1", "m2", "m3"),  # summarises s1: session level only
        hit("turn", "s2", "m1"),  # right message id, wrong session
        hit("fact", "s1", "m2"),
        hit("task_card", "s1", "m3"),
        hit("decision", "s1", "m3", "m9"),
    ]
    score = score_question(query(["s1:m2", "s1:m3"], ["s1"]), hits, (1, 3, 5), {})

    assert score.messages is not None and score.sessions is not None
    assert score.messages.recall == {1: 0.0, 3: 0.5, 5: 1.0}
    assert score.messages.reciprocal_rank == pytest.approx(1 / 3)
    assert score.sessions.recall == {1: 1.0, 3: 1.0, 5: 1.0}
    assert score.sessions.reciprocal_rank == 1.0


def test_session_recall_and_no_evidence_found() -> None:
    hits = [hit("turn", "s9", "m1"), hit("turn", None), hit("episode", "s2", "m1")]
    score = score_question(query(["s1:m1"], ["s1", "s2"]), hits, (1, 2, 3), {})

    assert score.messages is not None and score.sessions is not None
    assert score.messages.recall == {1: 0.0, 2: 0.0, 3: 0.0}
    assert score.messages.reciprocal_rank == 0.0
    assert score.sessions.recall == {1: 0.0, 2: 0.0, 3: 0.5}
    assert score.sessions.reciprocal_rank == pytest.approx(1 / 3)


def test_leaks_are_hits_from_another_namespace_by_label_or_by_session() -> None:
    hits = [
        hit("turn", "a1", "m1"),
        hit("turn", "b1", "m1", namespace="bob"),
        hit("turn", "b2", "m1"),  # labelled alice, but b2 is bob's session
    ]
    score = score_question(query(), hits, KS, {"a1": "alice", "b1": "bob", "b2": "bob"})

    assert score.messages is None and score.sessions is None
    assert score.leaks == 2


def test_summary_is_a_macro_average_that_leaves_out_questions_without_evidence() -> None:
    found = score_question(query(["s1:m1"], ["s1"]), [hit("turn", "s1", "m1")], KS, {})
    missed = score_question(
        query(["s1:m1", "s1:m2"], ["s1"], "temporal"), [hit("turn", "s1", "m2")] * 5, KS, {}
    )
    unlabelled = score_question(query(category="adversarial"), [], KS, {})

    summary = summarise([found, missed, unlabelled], KS)

    assert list(summary) == ["adversarial", "single-hop", "temporal", OVERALL]
    overall = summary[OVERALL]
    assert overall.questions == 3 and overall.leaks == 0
    assert overall.messages is not None and overall.messages.questions == 2
    assert overall.messages.recall[1] == pytest.approx((1.0 + 0.5) / 2)
    assert overall.messages.mrr == pytest.approx(1.0)
    assert summary["adversarial"] == GroupSummary(1, None, None, None, 0, 1, 1)
    table = render_table(summary, KS)
    assert "R@10" in table and "adversarial" in table
    assert len({len(line) for line in table.splitlines()[1:]}) == 1  # fixed width


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 50) == 10.0
    assert percentile(values, 95) == 19.0
    assert percentile([], 95) == 0.0


# --- inputs --------------------------------------------------------------------------------


def q_line(**fields: object) -> str:
    base: dict[str, object] = {
        "id": "q1",
        "namespace": "alice",
        "question": "Where do I stay?",
        "asked_at": "2026-11-20T10:00:00Z",
        "category": "single-hop",
        "evidence_message_ids": ["s1:m3"],
        "evidence_session_ids": ["s1"],
    }
    return json.dumps(base | fields)


def test_bad_query_lines_are_reported_with_their_line_numbers() -> None:
    text = "\n".join(
        [
            q_line(),
            "{oops",
            "",
            q_line(id="q3", question=None),
            q_line(id="q4", evidence_message_ids=["m3"]),
            q_line(id="q5", asked_at="2026-11-20T10:00:00"),
            q_line(),
            q_line(id="q7", extra=1),
            q_line(id="q8", evidence_message_ids=[], evidence_session_ids=[]),
        ]
    )
    queries, problems = read_queries("queries.jsonl", text)

    assert [(n, q.id) for n, q in queries] == [(1, "q1"), (9, "q8")]
    where = {p.line or 0: p.reason for p in problems}
    assert sorted(where) == [2, 4, 5, 6, 7, 8]
    assert "not valid JSON" in where[2]
    assert "question" in where[4]
    assert "'<session_id>:<message_id>'" in where[5]
    assert "UTC offset" in where[6]
    assert "duplicate question id 'q1' (first on line 1)" in where[7]
    assert "extra" in where[8]
    assert str(problems[0]).startswith("queries.jsonl:2: ")


def session(sid: str, namespace: str = "alice") -> str:
    return json.dumps({"type": "session", "id": sid, "namespace": namespace, "agent": "aria"})


def message(mid: str, content: str = "hello there", ts: str = "2026-11-20T09:00:00Z") -> str:
    return json.dumps(
        {
            "type": "message",
            "id": mid,
            "role": "user",
            "speaker": "Alice",
            "content": content,
            "timestamp": ts,
        }
    )


def test_one_file_many_sessions_with_problems_on_the_file_s_lines() -> None:
    lines = [
        message("m0"),  # 1: before any session
        session("s1"),  # 2
        message("m1"),  # 3
        "",  # 4
        message("m2"),  # 5
        session("s2"),  # 6
        message("m1"),  # 7
        '{"type": "message", "id": "m2"}',  # 8: missing fields
        message("m1"),  # 9: duplicate within s2
        '{"type": "session", "id": "s3"}',  # 10: bad session line
        message("m1"),  # 11: dropped with it
        session("s1"),  # 12: duplicate session
        message("m5"),  # 13
    ]
    transcripts, problems = read_sessions("sessions.jsonl", "\n".join(lines))

    assert [(t.session.id, [m.id for m in t.messages]) for t in transcripts] == [
        ("s1", ["m1", "m2"]),
        ("s2", ["m1"]),
    ]
    where = {p.line or 0: p.reason for p in problems}
    assert sorted(where) == [1, 8, 9, 10, 12]
    assert "before the first session" in where[1]
    assert "missing field" in where[8]
    assert "duplicate message id (first on line 7)" in where[9]
    assert "session skipped, 1 message lines not loaded" in where[10]
    assert "duplicate session id 's1' (first on line 2)" in where[12]


def test_evidence_must_exist_in_the_question_s_namespace() -> None:
    transcripts, _ = read_sessions(
        "s.jsonl", "\n".join([session("s1"), message("m1"), session("b1", "bob"), message("m1")])
    )
    numbered = [
        (1, query(["s1:m1"], ["s1"])),
        (2, query(["s1:m7"], ["s1"])),
        (3, query(["b1:m1"], ["b1"])),
        (4, query(category="adversarial")),
    ]
    kept, problems = check_evidence("q.jsonl", numbered, transcripts)

    assert len(kept) == 2
    assert [(p.line, p.reason.split(":")[0]) for p in problems] == [
        (2, "question 'q'"),
        (3, "question 'q'"),
        (4, "question 'q'"),
    ]
    assert "['s1:m7'] are not in the sessions file" in problems[0].reason
    assert "not sessions of namespace 'alice'" in problems[1].reason
    assert "unknown category 'adversarial' (known: " in problems[2].reason
    assert problems[2].reason.endswith("kept, scored under its own name")


def test_evidence_said_after_the_question_is_flagged_and_the_question_skipped() -> None:
    transcripts, _ = read_sessions(
        "s.jsonl",
        "\n".join([session("s1"), message("m1"), message("m2", ts="2026-11-21T09:00:00Z")]),
    )
    numbered = [(1, query(["s1:m1"], ["s1"])), (2, query(["s1:m1", "s1:m2"], ["s1"]))]

    kept, problems = check_evidence("q.jsonl", numbered, transcripts)

    assert kept == [numbered[0][1]]
    assert [p.line for p in problems] == [2]
    assert "evidence messages ['s1:m2'] were said after the question (asked_at 2026-11-20T09" in (
        problems[0].reason
    )


@pytest.mark.parametrize("text", ["", "\n\n", "not json at all\n", '{"id": "q1"}\n', "\x00\x01"])
def test_a_sessions_file_without_a_session_is_one_clear_error(text: str) -> None:
    with pytest.raises(InputError, match="no session in s.jsonl: each session starts with a line"):
        load_inputs(("s.jsonl", text), ("q.jsonl", json.dumps({"id": "q"})))


def test_a_set_without_a_usable_question_is_an_error() -> None:
    with pytest.raises(InputError, match="no usable question in q.jsonl"):
        load_inputs(("s.jsonl", session("s1")), ("q.jsonl", "{oops"))


def test_a_labelled_history_may_be_dated_ahead_of_today_but_not_outside_the_window() -> None:
    lines = [
        session("s1"),
        message("m1", ts="2031-05-01T09:00:00Z"),  # a replayed history has no today
        message("m2", ts="2200-01-02T00:00:00Z"),
        message("m3", ts="0001-01-01T00:00:00+01:00"),
    ]
    ask: dict[str, object] = {"id": "q", "namespace": "alice", "question": "hello?"}
    ask |= {"category": "single-hop", "asked_at": "2031-06-01T09:00:00Z"}
    ask |= {"evidence_message_ids": ["s1:m1"]}
    loaded = load_inputs(
        ("s.jsonl", "\n".join(lines)),
        ("q.jsonl", json.dumps(ask | {"evidence_session_ids": ["s1"]})),
    )
    assert [m.id for t in loaded.transcripts for m in t.messages] == ["m1"]
    assert [(p.line, "timestamp" in p.reason) for p in loaded.problems] == [(3, True), (4, True)]


def test_each_sync_run_covers_its_whole_local_day() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    as_of, hours = day_run(date(2026, 11, 20), berlin)
    assert as_of.isoformat() == "2026-11-20T23:59:59.999999+01:00" and hours == 24.0
    as_of, hours = day_run(date(2026, 10, 25), berlin)  # clocks go back: a 25-hour day
    assert as_of.isoformat() == "2026-10-25T23:59:59.999999+01:00" and hours == 25.0
    _, hours = day_run(date(2026, 3, 29), berlin)  # clocks go forward: 24 h still covers it
    assert hours == 24.0


# --- end to end on the labelled set --------------------------------------------------------


def labelled_set() -> EvalInputs:
    sessions, queries = DATA / "sessions.jsonl", DATA / "queries.jsonl"
    return load_inputs(
        (str(sessions), sessions.read_text("utf-8")), (str(queries), queries.read_text("utf-8"))
    )


class BrokenRanking(Retriever):
    """A retriever whose ranking is upside down: the control that the thresholds can fail."""

    def search(self, namespace: str, query: str, *, limit: int = 10, **kwargs: Any) -> list[Hit]:
        everything = super().search(namespace, query, limit=100, **kwargs)
        return everything[::-1][:limit]


def run(retriever: Retriever, inputs: EvalInputs) -> dict[str, GroupSummary]:
    namespaces = {t.session.id: t.session.namespace for t in inputs.transcripts}
    runs = run_queries(retriever, inputs.queries, max(KS), dict(PRESETS["archivist"]))
    return summarise([score_question(r.query, r.hits, KS, namespaces) for r in runs], KS)


def test_labelled_set_end_to_end(store: Store) -> None:
    inputs = labelled_set()
    embedder = make_embedder(store.settings.embedding)
    settings = store.settings
    assert inputs.problems == ()

    build = build_memory(store.engine, inputs.transcripts, embedder, settings.tz)
    summary = run(Retriever(store.engine, embedder, settings.retrieval, settings.tz), inputs)
    everything = settings.retrieval.model_copy(update={"min_cosine": -1.0})  # no floor
    broken = run(BrokenRanking(store.engine, embedder, everything), inputs)

    assert (build.sessions, build.days, build.without_memory) == (11, 12, [])
    assert build.written.sessions == 12  # the session spanning two days is written twice
    for group in summary.values():
        for level in (group.messages, group.sessions):
            if level is not None:
                values = [*level.recall.values(), level.mrr]
                assert all(0.0 <= v <= 1.0 for v in values)
                assert level.recall[10] >= level.recall[5] >= level.recall[1]
    overall = summary[OVERALL]
    assert overall.questions == 23 and overall.leaks == 0
    assert overall.messages is not None and overall.sessions is not None
    # Measured 0.77 and 0.95 with the hashing embedder; upside-down ranking gets 0.14 and 0.10.
    assert overall.messages.recall[10] >= 0.7
    assert overall.sessions.recall[1] >= 0.85
    bad = broken[OVERALL]
    assert bad.messages is not None and bad.sessions is not None
    assert bad.messages.recall[10] < 0.7 and bad.sessions.recall[1] < 0.85
    adversarial = summary["adversarial-namespace"]
    assert (adversarial.questions, adversarial.unanswerable, adversarial.leaks) == (3, 3, 0)
    assert adversarial.messages is None and adversarial.distinct is None


def test_memory_is_built_once_and_questions_do_not_count_as_accesses(store: Store) -> None:
    inputs = labelled_set()
    embedder = make_embedder(store.settings.embedding)
    retriever = Retriever(store.engine, embedder, store.settings.retrieval)

    build_memory(store.engine, inputs.transcripts, embedder, store.settings.tz)
    first = run(retriever, inputs)
    again = build_memory(store.engine, inputs.transcripts, embedder, store.settings.tz)

    assert again.written.memories_added == 0 and again.without_memory == []
    assert run(retriever, inputs) == first


def test_a_labelled_session_stored_under_another_namespace_is_refused(store: Store) -> None:
    add_session(store, "a1", "bob", chat(T0, "Something else entirely."))

    with pytest.raises(InputError, match=r"a1 \(stored in 'bob', labelled 'alice'\).*scratch"):
        check_namespaces(store.engine, labelled_set().transcripts)


def test_assistant_only_and_long_sessions_are_built_and_found(store: Store) -> None:
    def line(**fields: str) -> str:
        return json.dumps({"type": "message", "speaker": "aria", **fields})

    filler = "The nightly billing backup copied every volume to the eastern site. " * 140
    sessions = "\n".join(
        [
            '{"type": "session", "id": "report", "namespace": "alice", "agent": "aria"}',
            line(
                id="m1",
                role="assistant",
                content="Your dentist moved to Thursday.",
                timestamp="2026-11-20T09:00:00Z",
            ),
            '{"type": "session", "id": "paste", "namespace": "alice", "agent": "aria"}',
            line(
                id="m1",
                role="user",
                content=filler + "The rack 7 cable is quetzalcoatlite.",
                timestamp="2026-11-20T10:00:00Z",
            ),
            '{"type": "session", "id": "tools", "namespace": "alice", "agent": "aria"}',
            line(id="m1", role="tool", content="3 passed", timestamp="2026-11-20T11:00:00Z"),
        ]
    )
    transcripts, problems = read_sessions("sessions.jsonl", sessions)
    embedder = make_embedder(store.settings.embedding)

    build = build_memory(store.engine, transcripts, embedder, store.settings.tz)
    retriever = Retriever(store.engine, embedder, store.settings.retrieval, store.settings.tz)
    asked = datetime(2026, 11, 21, tzinfo=UTC)
    asks = {
        "q1": ("When is the dentist?", "report:m1"),
        "q2": ("Which cable is quetzalcoatlite?", "paste:m1"),
    }
    questions = [
        EvalQuery(
            id=qid,
            namespace="alice",
            question=question,
            asked_at=asked,
            category="single-hop",
            evidence_message_ids=(evidence,),
            evidence_session_ids=(evidence.split(":")[0],),
        )
        for qid, (question, evidence) in asks.items()
    ]
    runs = run_queries(retriever, questions, 3)

    assert problems == [] and build.without_memory == ["tools"]
    for r in runs:
        top = r.hits[0]
        assert (top.session_id, top.message_ids) == (r.query.evidence_session_ids[0], ("m1",))


def test_distinct_session_recall_counts_each_session_once_in_rank_order() -> None:
    hits = [hit("turn", "s1", "m1"), hit("fact", "s1", "m1"), hit("turn", "s1", "m2")]
    hits += [hit("turn", "s2", "m1"), hit("episode", "s3")]

    score = score_question(query(sessions=["s2", "s3"]), hits, (1, 2, 3), {})

    assert score.sessions is not None and score.distinct is not None
    assert score.sessions.recall == {1: 0.0, 2: 0.0, 3: 0.0}  # three hits, one session
    assert score.distinct.recall == {1: 0.0, 2: 0.5, 3: 1.0}  # s1, s2, s3
    assert score.distinct.reciprocal_rank == pytest.approx(1 / 2)


def test_an_unanswerable_question_abstains_only_with_no_hit() -> None:
    empty = score_question(query(category="none"), [], KS, {})
    answered = score_question(query(category="none"), [hit("turn", "s1", "m1")], KS, {})

    group = summarise([empty, answered], KS)["none"]

    assert (group.unanswerable, group.abstained) == (2, 1)
    assert "1/2" in render_table({"none": group}, KS)
