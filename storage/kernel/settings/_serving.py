"""Settings of what assistants reach: retrieval, and the HTTP API and MCP servers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class RetrievalSettings(BaseModel):
    """How search ranks and how much it fetches; weights may come from the policy file."""

    preset: Literal["archivist", "librarian"] = Field(
        "archivist",
        description="archivist: 1 semantic, 0.05 importance, 0.5 window (the time a question "
        "names), 0.3 supersede (asked about now, newer first), 0.7 context (the turns next to "
        "the best turns), 0.7 session (the best turns of the sessions the best hits point "
        "to); librarian: 0.40 semantic, 0.25 "
        "recency, 0.20 frequency, 0.15 vehemence",
    )
    weights: dict[str, float] | None = Field(
        None, description="custom factor weights, replacing the preset's"
    )
    half_life_days: float = Field(
        30.0, gt=0, description="half-life of the recency and salience factors, in days"
    )
    overfetch: int = Field(
        2, ge=1, le=20, description="candidates per hit the pool is sized for (max(limit, 50))"
    )
    dense_share: float = Field(
        0.5, ge=0, le=1, description="share of dense cosine in the fused relevance (rest BM25)"
    )
    ann_min_namespace_rows: int = Field(
        2_000, ge=100, description="namespaces this large get the HNSW index"
    )
    ef_search: int = Field(
        100, ge=10, le=1000, description="hnsw.ef_search of a walk through a namespace's index"
    )
    stats_ttl_seconds: float = Field(
        300.0, ge=0, description="how long BM25 statistics are reused in-process (0: never)"
    )
    min_cosine: float | None = Field(
        None,
        ge=-1,
        le=1,
        description="a query with no word match needs a candidate this close; default: embedder's",
    )
    max_limit: int = Field(100, ge=1, le=1000, description="largest limit a search accepts")
    prepared_statements: bool = Field(
        True,
        description="search's statements planned once per connection (off behind a pooler "
        "in transaction mode that cannot keep prepared statements)",
    )
    prime_episodes: int = Field(3, ge=0, le=50, description="recent episodes in a priming")
    prime_min_salience: float = Field(
        0.3, ge=0, le=1, description="episodes less salient are left out of a priming"
    )
    prime_threads: int = Field(5, ge=0, le=50, description="open threads in a priming")
    prime_facts: int = Field(10, ge=0, le=100, description="salient facts in a priming")


class ServingSettings(BaseModel):
    """The HTTP API and the MCP server (``archivist api``, ``archivist mcp``)."""

    # hide_input_in_errors: the serving URL carries the serving role's password.
    model_config = ConfigDict(hide_input_in_errors=True)

    database_url: SecretStr | None = Field(
        None,
        description="URL that logs in as the serving role (archivist_serving), the only "
        "database URL archivist api and mcp use (archivist db roles prints it); unset: the "
        "pipeline's or the owner's URL with that user and no password, or the embedded server "
        "with that user",
    )
    key: SecretStr | None = Field(
        None,
        description="the namespace key (archivist keys create) archivist mcp serves with "
        "over stdio: its namespace and whether it may write; needed under row-level security",
    )
    row_level_security: bool = Field(
        True, description="serve as archivist_serving, which sees one namespace per transaction"
    )
    host: str = Field("127.0.0.1", description="address archivist api and mcp listen on")
    api_port: int = Field(8765, ge=0, le=65535, description="port of archivist api")
    mcp_port: int = Field(8766, ge=0, le=65535, description="port of archivist mcp --http")
    pool_size: int = Field(
        16,
        ge=1,
        le=200,
        description="database connections kept open by archivist api (split across its "
        "--workers processes, each serving as many requests at once) or by one MCP server",
    )
    max_body_bytes: int = Field(65_536, ge=1024, le=16_777_216, description="larger: 413")
    access_batch_seconds: float = Field(
        1.0,
        ge=0,
        le=60,
        description="archivist api writes its searches' accesses (the counts ranking reads) "
        "together about this often; a crash loses at most this long's (0: each search writes "
        "its own)",
    )
