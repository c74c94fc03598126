"""What serving shows: public ids in hits and in the traces of the memory files."""

from __future__ import annotations

from datetime import UTC, datetime

from serving import MAX_TRACED, ShownIds
from storage.public_ids import PublicIds
from storage.retrieval import DocSource, Hit

KEY = bytes(range(32))
AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_a_hit_shows_public_ids_only() -> None:
    ids = ShownIds(PublicIds(KEY))
    memory = Hit(7, "ann", "fact", "x", 1.0, {}, {}, AT, AT, "s1", ("m1",), "fresh", (3, 4))
    doc = DocSource(5, 9, "a.md", "A", None, "", 0, 1)
    chunk = Hit(None, "ann", "doc", "x", 1.0, {}, {}, AT, AT, None, (), "document", doc=doc)
    shown, shown_chunk = ids.hit(memory), ids.hit(chunk)
    assert shown.memory_id == ids.show("memory", 7) and shown.message_ids == ("m1",)
    assert shown.sources == (ids.show("memory", 3), ids.show("memory", 4))
    assert shown_chunk.memory_id is None and shown_chunk.doc is not None
    assert (shown_chunk.doc.document_id, shown_chunk.doc.chunk_id) == (
        ids.show("document", 5),
        ids.show("chunk", 9),
    )


def test_the_traces_of_the_memory_files_show_public_ids() -> None:
    ids = ShownIds(PublicIds(KEY))
    many = ",".join(str(n) for n in range(100, 100 + MAX_TRACED + 5))
    memory_md = (
        "# Long-term\n"
        "- Allergic to penicillin <!-- m:12,40-42 +3 -->\n"
        f"- Likes trains <!-- m:{many} -->\n"
        "- A line that says <!-- m:12 --> in its text is traced all the same\n"
    )
    daily = "## 09:00 chat\n<!-- session=s-1 state=abcd memories=5,6 -->\ntext 5,6\n"

    long_term, log = ids.traces(memory_md), ids.traces(daily)

    traced = [
        line.split("<!-- m:")[1].split(" ")[0].split(",") for line in long_term.splitlines()[1:]
    ]
    reals = [[ids.take("memory", int(p)) for p in line] for line in traced]
    assert reals == [[12, 40, 41, 42], list(range(100, 100 + MAX_TRACED)), [12]]
    assert long_term.splitlines()[1].endswith(" +3 -->")
    assert long_term.splitlines()[2].endswith(" +5 -->")
    assert f"memories={ids.show('memory', 5)},{ids.show('memory', 6)} -->" in log
    assert log.endswith("\ntext 5,6\n")  # only traces change
