"""Packed id, distance and text arrays reach PostgreSQL as the same values lists would."""

from __future__ import annotations

import math

from sqlalchemy import text

from storage.retrieval.candidates import rows
from storage.server.binary_arrays import Float8Array, Int8Array, TextArray
from storage.server.engine import Store

BOTH = text(
    "SELECT CAST(:ids AS bigint[]) AS ids, CAST(:dists AS float8[]) AS dists, "
    "CAST(:ids AS bigint[]) = CAST(:ids_list AS bigint[]) AS same_ids, "
    "CAST(:dists AS float8[]) = CAST(:dists_list AS float8[]) AS same_dists"
)


def test_packed_arrays_read_back_as_the_lists_they_were_made_of(store: Store) -> None:
    ids = [1, 2**62 + 3, 42, -7]
    # Distances as a walk returns them, with every bit of each double significant.
    dists = [0.0, 1 / 3, math.pi / 7, 2.0000000000000004, 1e-300]
    with store.engine.connect() as conn:
        for prepare in (False, True):
            params = {
                "ids": Int8Array(ids),
                "dists": Float8Array(dists),
                "ids_list": ids,
                "dists_list": dists,
            }
            (row,) = rows(conn, BOTH, params, prepare=prepare)
            assert row.ids == ids
            assert row.dists == dists  # exact: the same doubles
            assert row.same_ids and row.same_dists


def test_empty_packed_arrays_are_empty_arrays(store: Store) -> None:
    with store.engine.connect() as conn:
        found = conn.execute(
            text(
                "SELECT cardinality(CAST(:ids AS bigint[])) AS n, "
                "cardinality(CAST(:dists AS float8[])) AS m, "
                "(SELECT count(*) FROM unnest(CAST(:ids AS bigint[]), "
                "CAST(:dists AS float8[]))) AS pairs"
            ),
            {"ids": Int8Array(()), "dists": Float8Array(())},
        ).one()
    assert (found.n, found.m, found.pairs) == (0, 0, 0)
    assert list(Int8Array([3, 4])) == [3, 4] and len(Float8Array([0.5])) == 1


TEXTS = text(
    "SELECT CAST(:words AS text[]) AS words, "
    "CAST(:words AS text[]) IS NOT DISTINCT FROM CAST(:words_list AS text[]) AS same, "
    "cardinality(CAST(:none AS text[])) AS empty"
)


def test_packed_text_arrays_read_back_as_the_lists_they_were_made_of(store: Store) -> None:
    # What array text would quote or escape, other scripts, the empty word, NULL and "NULL".
    words = [
        'a "quoted", {braced} word',
        "back\\slash",
        "",
        None,
        "NULL",
        "Grüße",
        "今日は",
        "x" * 3000,
    ]
    with store.engine.connect() as conn:
        for prepare in (False, True):
            params = {"words": TextArray(words), "words_list": words, "none": TextArray(())}
            (row,) = rows(conn, TEXTS, params, prepare=prepare)
            assert row.words == words
            assert row.same and row.empty == 0
    packed = TextArray(["fresh", "compressed"])
    assert list(packed) == ["fresh", "compressed"] and len(packed) == 2
    assert "fresh" in packed and "archived" not in packed


def test_lists_of_a_known_array_type_keep_psycopg_s_dumpers(store: Store) -> None:
    # COPY's set_types picks dumpers by type: a list there is no packed array.
    with store.engine.connect() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        with driver.cursor() as cursor:
            cursor.execute("CREATE TEMP TABLE copied (words text[], ids bigint[], dists float8[])")
            with cursor.copy("COPY copied FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["text[]", "bigint[]", "float8[]"])
                copy.write_row((["a", None], [1, 2**40], [0.5, 1 / 3]))
            cursor.execute("SELECT words, ids, dists FROM copied")
            assert cursor.fetchall() == [(["a", None], [1, 2**40], [0.5, 1 / 3])]
