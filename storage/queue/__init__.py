"""``memory_write_queue``: durable writes (memories, messages, forgets, documents), claimed by
any number of drainers."""

from storage.queue._document import AddDocument, DocumentFormat
from storage.queue._items import forget_documents, item_status, restart_claim
from storage.queue._payloads import (
    Enqueued,
    ForgetMemory,
    MemoryKind,
    MemoryText,
    QueueItem,
    QueueStats,
    Reclaimed,
    RecordMessage,
    parse_stored,
)
from storage.queue.table import (
    claim,
    complete,
    dead_items,
    enqueue,
    fail,
    forget_memory,
    notifications,
    purge_completed,
    queue_stats,
    reclaim,
    relax_commit,
)

__all__ = [
    "AddDocument",
    "DocumentFormat",
    "Enqueued",
    "ForgetMemory",
    "MemoryKind",
    "MemoryText",
    "QueueItem",
    "QueueStats",
    "Reclaimed",
    "RecordMessage",
    "claim",
    "complete",
    "dead_items",
    "enqueue",
    "fail",
    "forget_documents",
    "forget_memory",
    "item_status",
    "notifications",
    "parse_stored",
    "purge_completed",
    "queue_stats",
    "reclaim",
    "relax_commit",
    "restart_claim",
]
