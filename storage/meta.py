"""Facts recorded with the schema (embedding dimension, text-search configuration)."""

from __future__ import annotations

from sqlalchemy import String, Text, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from storage.base import Base
from storage.config import Settings
from storage.errors import ConfigurationError


class SchemaFact(Base):
    __tablename__ = "archivist_meta"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


def record_fact(session: Session, key: str, value: str) -> None:
    """Record one schema fact, keeping the first value written."""
    stmt = insert(SchemaFact).values(key=key, value=value).on_conflict_do_nothing()
    session.execute(stmt)


def read_facts(session: Session) -> dict[str, str]:
    """All schema facts."""
    return {row.key: row.value for row in session.scalars(select(SchemaFact))}


def check_compatible(session: Session, settings: Settings, embedder_dim: int) -> None:
    """Refuse an embedder or settings whose vector size differs from the stored schema."""
    facts = read_facts(session)
    stored = int(facts.get("embedding_dim", "0"))
    if stored != settings.embedding.dim or stored != embedder_dim:
        raise ConfigurationError(
            f"the store holds {stored}-dimensional embeddings, but the settings say "
            f"ARCHIVIST_EMBEDDING__DIM={settings.embedding.dim} and the embedder produces "
            f"{embedder_dim}; use the same dimension, or a new database for another model"
        )
