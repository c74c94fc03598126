"""``archivist reembed``: move the store to the configured embedding model.

Registered on the ``archivist`` group in ``deployments/cli.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from deployments.settings_loader import load_settings
from storage.kernel.errors import InputError
from storage.kernel.records import NAMESPACE
from storage.kernel.settings import Settings

if TYPE_CHECKING:
    from deployments.progress import Bars


ROWS = "memories and document chunks re-embedded"


@click.command("reembed")
@click.option("--namespace", help="Only this namespace's memories (the rest wait for a later run).")
@click.option(
    "--batch-size",
    type=click.IntRange(1, 10_000),
    default=256,
    show_default=True,
    help="Memories embedded and committed together.",
)
def reembed_command(namespace: str | None, batch_size: int) -> None:
    """Re-embed every memory and document chunk with the configured embedding model
    (resumable)."""
    from deployments.progress import progress_bars

    settings = load_settings()
    with progress_bars() as bars:
        run_reembed(settings, namespace, batch_size, bars)


def run_reembed(settings: Settings, namespace: str | None, batch_size: int, bars: Bars) -> None:
    """Re-embed with progress, then say whether the store now uses the new model."""
    from sqlalchemy.orm import Session

    from storage.embedding import make_embedder
    from storage.meta import reembed_model, stored_model
    from storage.server.engine import Role, open_store
    from storage.server.migrate import require_current
    from tasks.reembed import reembed

    if namespace is not None and not NAMESPACE.fullmatch(namespace):
        raise InputError(f"namespace {namespace!r} is not a valid name")
    store = open_store(settings, Role.OWNER)  # it changes the vector columns
    require_current(store.engine, settings)
    with Session(store.engine) as session:
        # store_encoder=auto: the graph a run under way moves to, else the store's own
        stored = reembed_model(session) or stored_model(session)
    embedder = make_embedder(
        settings.embedding, store.engine, redaction=settings.redaction, stored=stored
    )
    out = reembed(
        store.engine,
        embedder,
        namespace=namespace,
        batch=batch_size,
        turn_context=settings.embedding.turn_context,
        on_progress=lambda done, total: bars.update(
            ROWS, done, total, line=f"  {done}/{total} memories and document chunks re-embedded"
        ),
    )
    done = f"{out.embedded - out.chunks} memories and {out.chunks} document chunks re-embedded"
    if out.already_current:
        texts = "with their context" if out.turn_context else "alone"
        bars.echo(f"the store already uses {out.model} (turns embedded {texts}); nothing to do")
    elif out.swapped:
        bars.echo(f"{done}; the store now uses {out.model}")
    else:
        bars.echo(
            f"{done}; {out.pending} rows in other namespaces still wait, and the store keeps "
            "its old vectors until `archivist reembed` ends them"
        )
