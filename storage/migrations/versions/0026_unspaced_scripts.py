"""Lexemes for scripts written without spaces: character bigrams.

Revision ID: 0026
Revises: 0025

PostgreSQL's parser splits words at spaces and punctuation. Japanese, Chinese, Thai, Lao,
Khmer and Burmese put no space between words, so a whole clause became one lexeme
(``東京でaiの会議に行きました``) that no question repeats: those memories had no lexical side
and were found by their vectors alone.

``archivist_segmented(text)`` rewrites each run of such characters as its overlapping
character bigrams (``東京で会議`` -> ``東京 京で で会 会議``; a run of one character stays as
it is), the usual segmentation of full-text engines for these scripts, which needs no
dictionary; text without them is returned unchanged, so other languages keep their lexemes
exactly. Every lexeme column of ``memories`` and ``document_chunks`` (``tsv``, ``lex_len``,
``scoped_tsv``) is computed from the segmented text, and search segments the query the same
way (``storage.retrieval``).

The columns stay the generated columns they were (derived from ``content`` or a chunk's
text), so erasure, which removes or rewrites that text, removes their lexemes with it.
Stored document frequencies of the old unsegmented runs (``namespace_terms``) are dropped:
no query asks for them any more; the index step counts the bigrams when it next runs.

Changing the expressions rewrites both tables once (one ALTER TABLE each).
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

STORED_CONFIG = text("SELECT value FROM archivist_meta WHERE key = 'text_search_config'")
SOURCES = {"memories": "content", "document_chunks": "heading || ' ' || text"}

# Thai, Lao, Myanmar, Khmer, Hiragana and Katakana, CJK ideographs (extension A, unified,
# compatibility) and half-width Katakana. Hangul is written with spaces and is left alone.
UNSPACED = (
    r"\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    r"\uf900-\ufaff\uff66-\uff9f"
)
SEGMENTED = f"""
    CREATE FUNCTION archivist_segmented(body text)
    RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE WHEN body !~ '[{UNSPACED}]' THEN body ELSE (
        SELECT string_agg(
            CASE WHEN r.m[1] IS NULL OR char_length(r.m[1]) < 2 THEN coalesce(r.m[1], r.m[2])
            ELSE (SELECT string_agg(substr(r.m[1], i, 2), ' ' ORDER BY i)
                  FROM generate_series(1, char_length(r.m[1]) - 1) i) END,
            ' ' ORDER BY r.n)
        FROM regexp_matches(body, '([{UNSPACED}]+)|([^{UNSPACED}]+)', 'g')
            WITH ORDINALITY AS r(m, n)) END
"""
STALE_TERMS = f"DELETE FROM namespace_terms WHERE lexeme ~ '[{UNSPACED}]'"


def _lexemes(ts_config: str, source: str, *, segmented: bool) -> str:
    body = f"archivist_segmented({source})" if segmented else source
    return f"to_tsvector('{ts_config}', {body})"


def _set_expressions(ts_config: str, *, segmented: bool) -> None:
    for table, source in SOURCES.items():
        lexemes = _lexemes(ts_config, source, segmented=segmented)
        op.execute(
            f"ALTER TABLE {table} "
            f"ALTER COLUMN tsv SET EXPRESSION AS ({lexemes}), "
            f"ALTER COLUMN lex_len SET EXPRESSION AS (length({lexemes})), "
            "ALTER COLUMN scoped_tsv SET EXPRESSION AS "
            f"(archivist_scoped_lexemes(namespace, {lexemes}))"
        )
        op.execute(f"ANALYZE {table}")


def _ts_config() -> str:
    config = op.get_context().config
    attrs = config.attributes if config is not None else {}
    stored = op.get_bind().execute(STORED_CONFIG).scalar()
    return str(stored or attrs.get("text_search_config", "english"))


def upgrade() -> None:
    op.execute(SEGMENTED)
    _set_expressions(_ts_config(), segmented=True)
    op.execute(STALE_TERMS)


def downgrade() -> None:
    _set_expressions(_ts_config(), segmented=False)
    op.execute("DROP FUNCTION archivist_segmented(text)")
