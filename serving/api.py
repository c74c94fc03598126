"""``archivist api``: the HTTP API over ``MemoryService``, on FastAPI and uvicorn.

Every namespace route needs ``Authorization: Bearer <key>`` (``archivist keys create``): no
key or a revoked one answers 401, a key of another namespace 403, a read-only key's write
403. Errors are JSON ``{"error": "..."}`` with the message the CLI prints for the same
mistake. Bodies over ``ARCHIVIST_SERVING__MAX_BODY_BYTES`` answer 413 before they are parsed
(a document's, over what its cap ``ARCHIVIST_DOCUMENTS__MAX_UPLOAD_BYTES`` can take as JSON;
the document itself over that cap 413 too). OpenAPI docs are at ``/docs``. One process holds
one service: one Retriever, one pool; ``--workers`` starts more processes.

Search, the most frequent request, is an endpoint like the others, kept cheap: its body
passes FastAPI's one validation (``SearchRequest``, the input gate's types), its key is
checked inside the search's own transaction, and its answer is rendered once by orjson
(``Json``): ``SearchAnswer`` documents it in the schema without running on it.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

import anyio.to_thread
import orjson
from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer
from fastapi_offline import FastAPIOffline

from serving import _api_errors as errors
from serving._api_models import (
    DocumentRequest,
    PrimeRequest,
    RememberRequest,
    SearchAnswer,
    SearchRequest,
)
from serving._body_limit import BodyLimit, Wider, document_body_bytes
from serving._grants import KeyFor
from serving._service import MAX_EPISODES, MemoryService
from serving._views import context_view, search_view
from storage.kernel.records import NAMESPACE
from storage.kernel.settings import Settings
from storage.keys import Grant

Namespace = Annotated[str, Path(pattern=NAMESPACE.pattern, max_length=100)]
MemoryId = Annotated[int, Path(ge=1, le=2**63 - 1)]
RowId = Annotated[int, Path(ge=1, le=2**63 - 1)]
DOCUMENTS = re.compile(r"/v1/namespaces/[^/]+/documents")


class KeyBearer(HTTPBearer):
    """The presented key (401 without one), as one dependency: the bearer scheme's parse
    (and its place in the OpenAPI schema) and the check together, where a dependency on
    ``HTTPBearer`` had FastAPI solve a second level of dependencies on every request (149
    against 158 us of CPU for a search's FastAPI path in-process, the search stubbed). The
    endpoint checks the key in its own worker thread: a dependency that read the store
    would take a thread of its own per request."""

    async def __call__(self, request: Request) -> str:  # type: ignore[override]
        credentials = await super().__call__(request)
        service: MemoryService = request.app.state.service
        return service.presented(None if credentials is None else credentials.credentials)


bearer = KeyBearer(
    auto_error=False,
    scheme_name="HTTPBearer",
    description="a namespace key: archivist keys create NS",
)

Key = Annotated[str, Depends(bearer)]


class Json(JSONResponse):
    """JSON of a value that is JSON already, rendered by orjson. The search endpoint returns
    one: for a returned dict, FastAPI validates it against the endpoint's annotation in a
    worker thread of its own (a second thread hop per request) and then encodes it, about
    0.6 ms for a search's ten hits here, against 3 us for this. A ``JSONResponse`` for
    FastAPI's schema: the route's ``response_model`` documents what it holds."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def lifespan_of(service: MemoryService) -> Any:
    """A lifespan that runs at most ``pool_size`` requests' endpoints at once (the worker
    threads they run in), as many as the process's pool holds connections: one request
    more would open a connection past the pool, closed again when returned, and each cost
    PostgreSQL a backend start (15 to 70 per 30 s of ``bench/api.py`` before, with the
    default 40 threads); a request past them waits for a thread instead. While it runs,
    the searches' accesses are written in batches (``serving._accesses``), and what waits
    is written when it ends."""
    pool_size = service.settings.serving.pool_size

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = pool_size
        service.accesses.start()
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(service.accesses.close)

    return lifespan


def create_app(service: MemoryService) -> FastAPI:
    """The API of one service (tests and ``--workers 1`` build it directly)."""
    # FastAPI with /docs and /redoc whose assets it serves itself, at /static-offline-docs.
    app = FastAPIOffline(
        title="Archivist",
        version="1",
        summary="Search, prime and write one namespace's memory.",
        lifespan=lifespan_of(service),
        # Archivist sets up no OpenTelemetry: with it on, FastAPI looked up the three global
        # providers on every request to find that out (8 us of a search's 163 in-process).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.service = service
    settings = service.settings
    adding = Wider(
        "POST",
        DOCUMENTS,
        document_body_bytes(settings),
        "3 x ARCHIVIST_DOCUMENTS__MAX_UPLOAD_BYTES + ARCHIVIST_SERVING__MAX_BODY_BYTES",
    )
    app.add_middleware(BodyLimit, max_bytes=settings.serving.max_body_bytes, wider=[adding])
    errors.install(app, service)

    @app.get("/v1/health", tags=["service"])
    def health() -> dict[str, Any]:
        """Whether the store answers; needs no key."""
        return service.health()

    def granted(key: str, namespace: str, *, write: bool = False) -> Grant:
        return service.check(KeyFor(key, namespace), write=write)

    @app.post(
        "/v1/namespaces/{namespace}/search",
        tags=["read"],
        response_class=Json,
        response_model=SearchAnswer,  # documented; a returned Response is sent as it is
    )
    def search(namespace: Namespace, body: SearchRequest, key: Key) -> Json:
        """The best memories for a query, each labelled ``[Memory n]`` with its provenance and
        the passage that answers, and the ``Sources:`` line to close an answer with; with
        ``budget_tokens``, the best passages that fit and the tokens they take."""
        if body.budget_tokens is not None:
            context = service.search_within(KeyFor(key, namespace), body, body.budget_tokens)
            return Json(context_view(namespace, context))
        cited = service.search(
            KeyFor(key, namespace),
            body.query,
            limit=body.limit,
            time_range=body.resolved_time_range(),
            kinds=body.kinds,
            include_archived=body.include_archived,
        )
        return Json(search_view(namespace, cited))

    @app.post("/v1/namespaces/{namespace}/prime", tags=["read"])
    def prime(namespace: Namespace, body: PrimeRequest, key: Key) -> dict[str, Any]:
        """What to remember as a conversation starts: episodes, open threads, facts, text."""
        return service.prime(granted(key, namespace), body.message, body.budget_tokens)

    @app.post("/v1/namespaces/{namespace}/memories", tags=["write"], status_code=202)
    def remember(namespace: Namespace, body: RememberRequest, key: Key) -> dict[str, Any]:
        """Queue a memory; the worker stores it. A repeated idempotency key is a no-op."""
        return service.remember(
            granted(key, namespace, write=True),
            body.content,
            kind=body.kind,
            importance=body.importance,
            occurred_at=body.occurred_at,
            idempotency_key=body.idempotency_key,
        )

    @app.get("/v1/namespaces/{namespace}/memories/{memory_id}", tags=["read"])
    def get_memory(namespace: Namespace, memory_id: MemoryId, key: Key) -> dict[str, Any]:
        """One memory with its provenance."""
        return service.get(granted(key, namespace), memory_id)

    @app.post("/v1/namespaces/{namespace}/memories/{memory_id}/pin", tags=["write"])
    def pin(namespace: Namespace, memory_id: MemoryId, key: Key) -> dict[str, Any]:
        """Pin a memory: it never decays, compresses, archives or is deleted."""
        return service.set_pinned(granted(key, namespace, write=True), memory_id, pinned=True)

    @app.post("/v1/namespaces/{namespace}/memories/{memory_id}/unpin", tags=["write"])
    def unpin(namespace: Namespace, memory_id: MemoryId, key: Key) -> dict[str, Any]:
        """Let a pinned memory age again."""
        return service.set_pinned(granted(key, namespace, write=True), memory_id, pinned=False)

    @app.delete("/v1/namespaces/{namespace}/memories/{memory_id}", tags=["write"])
    def forget(namespace: Namespace, memory_id: MemoryId, key: Key) -> dict[str, Any]:
        """Delete one memory now."""
        return service.forget(granted(key, namespace, write=True), memory_id)

    @app.get("/v1/namespaces/{namespace}/episodes", tags=["read"])
    def episodes(
        namespace: Namespace,
        key: Key,
        limit: Annotated[int, Query(ge=1, le=MAX_EPISODES)] = 5,
    ) -> dict[str, Any]:
        """The latest session summaries, newest first."""
        episodes = service.recent_episodes(granted(key, namespace), limit)
        return {"namespace": namespace, "episodes": episodes}

    @app.get("/v1/namespaces/{namespace}/queue", tags=["read"])
    def queue_stats(namespace: Namespace, key: Key) -> dict[str, Any]:
        """The write queue's counts for this namespace."""
        return service.queue_stats(granted(key, namespace))

    @app.get("/v1/namespaces/{namespace}/queue/{item_id}", tags=["read"])
    def queue_item(namespace: Namespace, item_id: RowId, key: Key) -> dict[str, Any]:
        """One queued write (the ``queue_item`` a 202 answered): its status (pending,
        processing, completed, dead), attempts, result and last error."""
        return service.documents.queued(granted(key, namespace), item_id)

    @app.post("/v1/namespaces/{namespace}/documents", tags=["write"], status_code=202)
    def add_document(namespace: Namespace, body: DocumentRequest, key: Key) -> dict[str, Any]:
        """Queue a document: Markdown, plain text or HTML as ``text``, or any of them or a PDF
        as ``content_base64``. The worker chunks, embeds and stores it as ``docs ingest``
        would the file; search finds its chunks (kind ``doc``). The same ``name`` again
        replaces it; a repeated idempotency key is a no-op. Over
        ``ARCHIVIST_DOCUMENTS__MAX_UPLOAD_BYTES``: 413."""
        grant = granted(key, namespace, write=True)
        return service.documents.add(grant, body, idempotency_key=body.idempotency_key)

    @app.get("/v1/namespaces/{namespace}/documents", tags=["read"])
    def list_documents(namespace: Namespace, key: Key) -> dict[str, Any]:
        """The namespace's documents (added here, over MCP or by ``docs ingest``), each with
        its id, name, source, title, tag, format, size and chunk count."""
        documents = service.documents.listed(granted(key, namespace))
        return {"namespace": namespace, "documents": documents}

    @app.delete("/v1/namespaces/{namespace}/documents/{document_id}", tags=["write"])
    def delete_document(namespace: Namespace, document_id: RowId, key: Key) -> dict[str, Any]:
        """Delete one document now, with its chunks and the queued writes that carry it."""
        return service.documents.delete(granted(key, namespace, write=True), document_id)

    # The API's routes before the documentation's (Starlette tries them in order, a regex
    # match each): a search tried five first (140 against 143 us of CPU in-process).
    app.router.routes.sort(key=lambda route: not getattr(route, "path", "").startswith("/v1/"))
    return app


def app_from_environment() -> FastAPI:
    """The factory ``uvicorn --factory`` calls in each worker process."""
    return settled(create_app(MemoryService.open(Settings())))


def settled(app: FastAPI) -> FastAPI:
    """The app of a server process, with what its start made (modules, the model, the app:
    about 140,000 objects) moved out of the cyclic garbage collector's reach
    (``gc.freeze``), where it stays for the process's life anyway. Else each full collection,
    about one per 1,500 searches, walked them all: 88 ms of CPU, 0.06 ms per search
    and a pause of a request now and then. Garbage is collected first, so none is kept."""
    gc.collect()
    gc.freeze()
    return app


def openapi_schema() -> dict[str, Any]:
    """The API's OpenAPI schema without a store, for the documentation's HTTP reference: the
    app around a service whose engine never connects, since no route is called. Default
    settings, not the environment's: the schema depends on none of them."""
    from sqlalchemy import create_engine

    from serving._files import MemoryFiles
    from serving._ids import ShownIds
    from storage.embedding import HashingEmbedder
    from storage.public_ids import PublicIds
    from storage.retrieval import Retriever

    settings = Settings.model_construct()
    retriever = Retriever(create_engine("postgresql+psycopg://"), HashingEmbedder())
    ids = ShownIds(PublicIds(bytes(32)))  # no id is shown: any key will do
    service = MemoryService(settings, retriever, MemoryFiles.of(settings), ids)
    return create_app(service).openapi()


def worker_pool_size(pool_size: int, workers: int) -> int:
    """Each worker process's share of the API's ``pool_size`` connections (rounded up)."""
    return -(-pool_size // workers)


def run(settings: Settings, *, host: str, port: int, workers: int = 1) -> None:
    """Serve until interrupted; ``workers`` > 1 starts that many processes, which share
    ``ARCHIVIST_SERVING__POOL_SIZE`` connections: more backends than concurrent searches
    only compete for the same cores (16 clients over 2 workers: p95 43 ms at 200
    searches/s with 8 connections each, 58 ms with 16 each)."""
    import uvicorn

    log: Literal["info"] = "info"
    if workers == 1:
        app = settled(create_app(MemoryService.open(settings)))
        uvicorn.run(app, host=host, port=port, log_level=log, access_log=False)
    else:
        # The workers build their settings from the environment (app_from_environment).
        share = worker_pool_size(settings.serving.pool_size, workers)
        os.environ["ARCHIVIST_SERVING__POOL_SIZE"] = str(share)
        uvicorn.run(
            "serving.api:app_from_environment",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level=log,
            access_log=False,
        )
