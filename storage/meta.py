"""Facts recorded with the schema: the embedding model and dimension, text-search config."""

from __future__ import annotations

from sqlalchemy import String, Text, delete, exists, func, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.documents import DocumentChunk
from storage.embedding import Embedder
from storage.kernel.base import Base
from storage.kernel.errors import ConfigurationError
from storage.memories import Memory

EMBEDDING_MODEL, EMBEDDING_DIM = "embedding_model", "embedding_dim"
# Set while ``archivist reembed`` fills the next vectors; gone when they replace the old.
REEMBED_MODEL, REEMBED_DIM = "reembed_model", "reembed_dim"
# How the turns' vectors were made (``embedding.turn_context``): "on", from each turn with
# its context, or "off", from the turn alone. Recorded by the first sync batch that writes
# turns and replaced by each re-embedding, so ``archivist reembed`` after toggling the
# setting re-embeds the turns; a store without it (from before it was recorded) is "off".
TURN_CONTEXT, REEMBED_TURN_CONTEXT = "embedding_turn_context", "reembed_turn_context"
CAN_RECORD = text("SELECT has_table_privilege('archivist_meta', 'INSERT')")
ADOPT = text("SELECT archivist_adopt_model(:model)")


class SchemaFact(Base):
    __tablename__ = "archivist_meta"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


def record_fact(session: Session, key: str, value: str) -> None:
    """Record one schema fact, keeping the first value written."""
    stmt = insert(SchemaFact).values(key=key, value=value).on_conflict_do_nothing()
    session.execute(stmt)


def set_fact(session: Session, key: str, value: str) -> None:
    """Record one schema fact, replacing any value it had."""
    stmt = insert(SchemaFact).values(key=key, value=value)
    session.execute(stmt.on_conflict_do_update(index_elements=["key"], set_={"value": value}))


def drop_facts(session: Session, *keys: str) -> None:
    """Forget schema facts."""
    session.execute(delete(SchemaFact).where(SchemaFact.key.in_(keys)))


def read_facts(session: Session) -> dict[str, str]:
    """All schema facts."""
    return {row.key: row.value for row in session.scalars(select(SchemaFact))}


def stored_model(session: Session) -> str | None:
    """The model (and graph) that made the store's vectors; None for a store holding no
    vector yet. A role that cannot see every row (the serving role) reads the recorded
    model."""
    if not session.execute(CAN_RECORD).scalar_one():
        return read_facts(session).get(EMBEDDING_MODEL)
    if _empty(session):
        return None
    return read_facts(session).get(EMBEDDING_MODEL) or _model_of_rows(session)


def turn_context_fact(*, turn_context: bool) -> str:
    """The ``TURN_CONTEXT`` fact's value for the setting."""
    return "on" if turn_context else "off"


def stored_turn_context(facts: dict[str, str]) -> bool:
    """Whether the store's turns were embedded with their context, from its facts."""
    return facts.get(TURN_CONTEXT) == turn_context_fact(turn_context=True)


def record_turn_context(session: Session, *, turn_context: bool) -> None:
    """Record how turns are embedded, unless the store already says (or the role cannot
    write facts); read first, so concurrent batches do not wait on each other's insert."""
    if TURN_CONTEXT in read_facts(session) or not session.execute(CAN_RECORD).scalar_one():
        return
    record_fact(session, TURN_CONTEXT, turn_context_fact(turn_context=turn_context))


def reembed_model(session: Session) -> str | None:
    """The model ``archivist reembed`` is moving the store to, while it is under way."""
    return read_facts(session).get(REEMBED_MODEL)


def check_compatible(session: Session, embedder: Embedder) -> None:
    """Refuse an embedder whose vectors would not be comparable with the stored ones.

    Model and dimension must be those of the store's vectors. A store holding no memories
    and no document chunks yet adopts the embedder's model when the dimension fits (there
    is nothing to mix).
    """
    facts = read_facts(session)
    stored_dim = int(facts.get(EMBEDDING_DIM, "0"))
    stored_model = facts.get(EMBEDDING_MODEL) or _model_of_rows(session)
    if stored_model == embedder.name and stored_dim == embedder.dim:
        return
    if stored_dim == embedder.dim and _adopted(session, embedder.name, stored_model):
        return
    under_way = facts.get(REEMBED_MODEL)
    raise ConfigurationError(
        f"the store's vectors come from {stored_model or 'an unknown model'} ({stored_dim} "
        f"dimensions), but the configured embedder is {embedder.name} ({embedder.dim}); "
        + (
            f"a re-embedding to {under_way} is under way: run `archivist reembed` to finish it"
            if under_way
            else "run `archivist reembed` to re-embed the store with the configured model, "
            "or configure the store's model again (ARCHIVIST_EMBEDDING__PROVIDER and __MODEL)"
        )
    )


def _adopted(session: Session, model: str, stored_model: str | None) -> bool:
    """Whether the store took ``model`` as its own: it holds no vector yet (or names no
    model). A role that cannot see every row or write the facts (the serving role) asks
    ``archivist_adopt_model`` (migration 0024), which adopts only for a store with no vector."""
    if not session.execute(CAN_RECORD).scalar_one():
        return bool(session.execute(ADOPT, {"model": model}).scalar() == model)
    if stored_model is None or _empty(session):
        set_fact(session, EMBEDDING_MODEL, model)
        return True
    return False


def _model_of_rows(session: Session) -> str | None:
    """The model most stored vectors name (for a store whose fact was never recorded):
    the memories' or, with none, the document chunks'."""
    for column in (Memory.embedding_model, DocumentChunk.embedding_model):
        stmt = select(column).group_by(column).order_by(func.count().desc(), column).limit(1)
        found = session.scalar(stmt)
        if found is not None:
            return str(found)
    return None


def _empty(session: Session) -> bool:
    """No memory and no document chunk holds a vector yet."""
    memory = exists().where(Memory.id.is_not(None))
    chunk = exists().where(DocumentChunk.id.is_not(None))
    return not session.scalar(select(memory | chunk))
