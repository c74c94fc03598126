"""``memory_write_queue``: durable memory writes, claimed by any number of drainers."""

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
    "forget_memory",
    "notifications",
    "parse_stored",
    "purge_completed",
    "queue_stats",
    "reclaim",
    "relax_commit",
]
