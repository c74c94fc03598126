"""What a search is given: validation, time ranges, and the parameters its SQL takes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, tzinfo
from typing import Any

import numpy as np

from storage.kernel import scoring
from storage.kernel.errors import ConfigurationError, RetrievalError
from storage.kernel.inputs import check_instant, storable
from storage.kernel.records import NAMESPACE
from storage.retrieval._types import TimeRange
from storage.server.binary_arrays import Float8Array, TextArray
from storage.server.query_vector import QueryVector

KINDS = (
    "episode",
    "task_card",
    "turn",
    "fact",
    "preference",
    "decision",
    "note",
    "goal",
    "long_term",
    "doc",  # chunks of knowledge documents (``_documents``)
)
MAX_QUERY_CHARS = 10_000
DF_CAP = 1000
# The most rows a word of the query selects for the lexical side to rank (lexical_params):
# under DF_CAP, the count at which a live count stops (a capped count says "at least").
LEXICAL_ROWS = DF_CAP - 1


def check_request(
    namespace: str,
    query: str,
    limit: int,
    kinds: Sequence[str] | None,
    max_limit: int,
    *,
    what: str = "query",
) -> None:
    """Refuse a search that cannot be answered, saying why; ``what`` names the query as the
    caller was given it (priming's first message)."""
    if not NAMESPACE.fullmatch(namespace):
        raise RetrievalError(
            f"bad namespace {namespace!r}: lowercase letters, digits, '.', '_', '-'"
        )
    if not query or not query.strip():
        raise RetrievalError(f"empty {what}: say what to search for")
    try:
        storable(query)
    except ValueError as exc:
        raise RetrievalError(f"{what} {exc}") from exc
    if len(query) > MAX_QUERY_CHARS:
        raise RetrievalError(f"{what} of {len(query)} characters; at most {MAX_QUERY_CHARS}")
    if not 1 <= limit <= max_limit:
        raise RetrievalError(
            f"limit {limit} out of range 1..{max_limit} (ARCHIVIST_RETRIEVAL__MAX_LIMIT)"
        )
    unknown = sorted(set(kinds or ()) - set(KINDS))
    if unknown:
        raise RetrievalError(f"unknown kind(s) {unknown}; known: {list(KINDS)}")


def custom_weights(weights: Mapping[str, float]) -> dict[str, float]:
    try:
        return scoring.resolve_weights("custom", weights)
    except ConfigurationError as exc:
        raise RetrievalError(str(exc)) from exc


def aware(moment: datetime, what: str = "as_of") -> datetime:
    """``moment`` if it is an ``Instant`` (``storage.kernel.inputs``), else ``RetrievalError``."""
    try:
        return check_instant(moment)
    except ValueError as exc:
        raise RetrievalError(f"{what} {moment.isoformat()} {exc}") from None


def vector_literal(vector: np.ndarray) -> QueryVector:
    """The search's ``qvec`` parameter."""
    return QueryVector(vector)


def lexical_params(terms: Sequence[tuple[str, int]], n_docs: int, namespace: str) -> dict[str, Any]:
    """BM25 idf per lexeme, and the query of the lexemes worth matching on: over ``tsv``
    (``tsquery``, which ``ts_rank`` orders by) and over ``scoped_tsv`` (``scoped_tsquery``,
    which finds the rows)."""
    idf = {t: math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) for t, df in terms if df > 0}
    # Candidates come from the terms that narrow the search: a word in more than 5% of a
    # namespace would make the lexical side rank thousands of rows, and its low idf adds
    # little. Such words still count in the BM25 of every candidate found otherwise. In a
    # large namespace 5% is itself thousands (the lexical side ranked 7,720 rows, 46 ms, in
    # a namespace of 156,000 memories; chunks' live counts, capped at DF_CAP, hid words in
    # 10,000 chunks: 115-220 ms): a word in DF_CAP rows or more is common whatever the
    # namespace's size, so the rows ranked stay bounded.
    common = min(max(50, n_docs // 20), LEXICAL_ROWS)
    found = sorted((df, t) for t, df in terms if df > 0)
    chosen, join = sorted(t for df, t in found if df <= common), " | "
    if not chosen:
        # Only common words: the rows that have the two rarest together (fewer, and more
        # on topic than a ranking of every row with the rarest), while the rarer is in at
        # most LEXICAL_ROWS (it bounds them); a lone word in DF_CAP memories or more
        # selects nothing.
        pair = found[:2] if len(found) > 1 and found[0][0] <= LEXICAL_ROWS else []
        if len(found) == 1:
            pair = [(df, t) for df, t in found if df < DF_CAP]
        chosen, join = sorted(t for _, t in pair), " & "
    scoped = [scoped_term(namespace, t) for t in chosen]
    return {
        "lexemes": TextArray(idf),
        "idfs": Float8Array(idf.values()),
        # Whether a row has any of them: BM25 is 0 without unnesting the others' lexemes.
        "any_lexeme": " | ".join(tsquery_term(t) for t in idf) or None,
        "tsquery": join.join(tsquery_term(t) for t in chosen) or None,
        "scoped_tsquery": join.join(q for q in scoped if q is not None) or None,
    }


# The longest lexeme PostgreSQL keeps, in bytes; ``scoped_tsv`` leaves out the longer ones.
MAX_LEXEME_BYTES = 2047


def tsquery_term(lexeme: str) -> str:
    """A lexeme as one quoted term of a tsquery."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def scoped_term(namespace: str, lexeme: str) -> str | None:
    """The tsquery term of ``lexeme`` in ``scoped_tsv`` (migration 0018: ``namespace:lexeme``);
    None if that is too long to be stored."""
    scoped = f"{namespace}:{lexeme}"
    return tsquery_term(scoped) if len(scoped.encode()) <= MAX_LEXEME_BYTES else None


def resolve_time_range(
    time_range: TimeRange | None, now: datetime, tz: tzinfo
) -> tuple[datetime | None, datetime | None]:
    """[start, end) of a named range in the configured zone, or of an explicit pair."""
    if time_range is None or time_range == "all":
        return None, None
    if isinstance(time_range, tuple):
        start, end = (
            aware(time_range[0], "time range start"),
            aware(time_range[1], "time range end"),
        )
        if start > end:
            raise RetrievalError(f"reversed time range: {start.isoformat()} > {end.isoformat()}")
        return start, end
    local = now.astimezone(tz)
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    starts = {
        "today": midnight,
        "week": midnight - timedelta(days=local.weekday()),
        "month": midnight.replace(day=1),
        "recent": now - timedelta(days=30),
    }
    if time_range not in starts:
        raise RetrievalError(f"unknown time range {time_range!r}; use {[*starts, 'all']}")
    return starts[time_range], now + timedelta(microseconds=1)
