"""Serving: the HTTP API (``serving.api``) and the MCP server (``serving.mcp``) over one
``MemoryService``, which reads and writes one namespace per request through the serving
role. Imports no Prefect, no flows and no tasks: it starts fast and carries no pipeline.
"""

from serving._accesses import Accesses
from serving._api_models import SearchAnswer
from serving._errors import (
    UNAVAILABLE,
    Conflict,
    Forbidden,
    NotFound,
    ServiceError,
    ServiceUnavailable,
    Unauthorized,
)
from serving._grants import KeyFor
from serving._ids import MAX_TRACED, ShownIds
from serving._service import MemoryService
from serving._views import (
    cited_view,
    context_view,
    hit_view,
    json_row,
    priming_view,
    search_view,
)

__all__ = [
    "Accesses",
    "Conflict",
    "Forbidden",
    "KeyFor",
    "MAX_TRACED",
    "MemoryService",
    "NotFound",
    "SearchAnswer",
    "ServiceError",
    "ServiceUnavailable",
    "ShownIds",
    "UNAVAILABLE",
    "Unauthorized",
    "cited_view",
    "context_view",
    "hit_view",
    "json_row",
    "priming_view",
    "search_view",
]
