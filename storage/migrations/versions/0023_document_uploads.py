"""Documents added over the HTTP API and MCP, through the write queue.

Revision ID: 0023
Revises: 0022

``memory_write_queue.op`` takes ``ADD_DOCUMENT``: a document's bytes, queued by the API or
MCP and chunked, embedded and stored by a drainer with ``docs ingest``'s steps.

``documents.queue_item`` is the queue item that last wrote a document added that way (NULL
for files ingested by ``docs ingest``). Items of one document can finish out of order (two
drainers, or an earlier item retried after a later one succeeded); a write carries its item
id and changes the row only when no later item wrote it, so the document ends as the last
accepted request says.

The serving role may delete a document of its namespace (row-level security confines it,
as for memories) and the queue items that carry that document's text, so that deleting it
over the API or MCP erases those copies too.
"""

from __future__ import annotations

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

ROLE = "archivist_serving"
OPS = ("ADD_MEMORY", "RECORD_MESSAGE", "SAVE_PREFERENCE", "UPDATE_GOAL", "FORGET_MEMORY")


def _ops_check(ops: tuple[str, ...]) -> str:
    listed = ", ".join(f"'{name}'" for name in ops)
    return (
        "ALTER TABLE memory_write_queue DROP CONSTRAINT memory_write_queue_op_check, "
        f"ADD CONSTRAINT memory_write_queue_op_check CHECK (op IN ({listed}))"
    )


def upgrade() -> None:
    op.execute(_ops_check((*OPS, "ADD_DOCUMENT")))
    op.execute("ALTER TABLE documents ADD COLUMN queue_item bigint")
    op.execute(f"GRANT DELETE ON documents, document_chunks, memory_write_queue TO {ROLE}")


def downgrade() -> None:
    op.execute(f"REVOKE DELETE ON documents, document_chunks, memory_write_queue FROM {ROLE}")
    op.execute("ALTER TABLE documents DROP COLUMN queue_item")
    op.execute("DELETE FROM memory_write_queue WHERE op = 'ADD_DOCUMENT'")
    op.execute(_ops_check(OPS))
