"""Open the store for work: connection, schema check, and an embedder that fits it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from storage.embedding import Embedder, make_embedder
from storage.kernel.settings import Settings
from storage.meta import check_compatible, stored_model
from storage.server.engine import Store, open_store
from storage.server.migrate import require_current


def connect(settings: Settings) -> tuple[Store, Embedder]:
    """Open the store, check its schema and that the configured embedder fits it (the
    local model's ``store_encoder=auto``: the graph of the vectors the store holds)."""
    store = open_store(settings)
    require_current(store.engine, settings)
    with Session(store.engine) as session, session.begin():
        embedder = make_embedder(
            settings.embedding,
            store.engine,
            redaction=settings.redaction,
            stored=stored_model(session),
        )
        check_compatible(session, embedder)
    return store, embedder
