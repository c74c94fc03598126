"""Open the store for work: connection, schema check, and an embedder that fits it."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from storage.embedding import Embedder, make_embedder
from storage.kernel.settings import Settings
from storage.meta import check_compatible, stored_model
from storage.server.engine import Role, Store, open_store
from storage.server.migrate import require_current


def connect(settings: Settings, role: Role = Role.PIPELINE) -> tuple[Store, Embedder]:
    """Open the store as ``role``, check its schema and that the configured embedder fits it."""
    store = open_store(settings, role)
    return store, checked_embedder(store.engine, settings)


def checked_embedder(engine: Engine, settings: Settings) -> Embedder:
    """The configured embedder, once the schema behind ``engine`` is current and its vectors
    are the embedder's (the local model's ``store_encoder=auto``: the graph of the vectors
    the store holds). Any role: the serving role's checks read only what it may."""
    require_current(engine, settings)
    with Session(engine) as session, session.begin():
        embedder = make_embedder(
            settings.embedding,
            engine,
            redaction=settings.redaction,
            stored=stored_model(session),
        )
        check_compatible(session, embedder)
    return embedder
