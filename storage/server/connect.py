"""Open the store for work: connection, schema check, and an embedder that fits it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from storage.embedding import Embedder, make_embedder
from storage.kernel.settings import Settings
from storage.meta import check_compatible
from storage.server.engine import Store, open_store
from storage.server.migrate import require_current


def connect(settings: Settings) -> tuple[Store, Embedder]:
    """Open the store, check its schema and that the configured embedder fits it."""
    store = open_store(settings)
    require_current(store.engine, settings)
    embedder = make_embedder(settings.embedding, store.engine, redaction=settings.redaction)
    with Session(store.engine) as session, session.begin():
        check_compatible(session, embedder)
    return store, embedder
