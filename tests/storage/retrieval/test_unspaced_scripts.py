"""Lexemes of scripts written without spaces (migration 0026): each run of Japanese,
Chinese or Thai characters is indexed and searched as its character bigrams, so a question
finds a memory by the words it shares with it; text with spaces keeps its lexemes exactly."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from storage.embedding import HashingEmbedder
from storage.kernel.settings import RetrievalSettings
from storage.retrieval import Retriever
from storage.server.engine import Store
from tests.storage.memory_factory import put

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
JAPANESE = [
    "来週の金曜日に歯医者の予約があります",
    "新しいアパートの家賃は月八万円です",
    "妹の誕生日パーティーは土曜日にやります",
]
OTHERS = ["The dentist appointment is next Friday", "Die Miete beträgt 800 Euro im Monat"]


def _lexemes(store: Store, body: str) -> set[str]:
    with store.engine.connect() as conn:
        found = conn.execute(
            text("SELECT tsvector_to_array(to_tsvector('english', archivist_segmented(:b)))"),
            {"b": body},
        ).scalar_one()
    return set(found)


def test_runs_without_spaces_become_bigrams_and_other_text_is_unchanged(store: Store) -> None:
    assert _lexemes(store, "東京で会議、AI") == {"ai", "東京", "京で", "で会", "会議"}
    assert _lexemes(store, "猫") == {"猫"}  # a run of one character stays whole
    assert {"ไป", "กร"} <= _lexemes(store, "ไปกรุงเทพ")
    put(store, "alice", [*JAPANESE, *OTHERS], NOW)
    with store.engine.connect() as conn:
        changed = conn.execute(
            text(
                "SELECT content FROM memories WHERE namespace = 'alice' "
                "AND content !~ '[\u3040-\u30ff\u4e00-\u9fff]' "
                "AND (tsv <> to_tsvector('english', content) "
                "OR lex_len <> length(to_tsvector('english', content)))"
            )
        ).scalars()
        assert list(changed) == []
        stored = conn.execute(
            text("SELECT tsvector_to_array(tsv) FROM memories WHERE content = :c"),
            {"c": JAPANESE[1]},
        ).scalar_one()
    assert {"家賃", "アパ", "パー", "ート"} <= set(stored)


def test_a_japanese_question_finds_its_memory_by_shared_words(store: Store) -> None:
    put(store, "alice", [*JAPANESE, *OTHERS], NOW)
    put(store, "bob", ["家賃は十万円です"], NOW)  # a look-alike in another namespace
    r = Retriever(
        store.engine, HashingEmbedder(384), RetrievalSettings(min_cosine=-1.0), store.settings.tz
    )

    for question, answer in [
        ("家賃はいくらですか", JAPANESE[1]),
        ("歯医者の予約はいつ", JAPANESE[0]),
        ("誕生日パーティーの日", JAPANESE[2]),
    ]:
        hits = r.search("alice", question, as_of=NOW, limit=5, record_access=False)
        assert hits[0].content == answer
        assert hits[0].factors["bm25"] > 0
        assert all(h.factors["bm25"] == 0 for h in hits[1:] if h.content in OTHERS)
        assert all(h.namespace == "alice" for h in hits)
