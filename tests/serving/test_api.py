"""The HTTP API through a real uvicorn on loopback (``archivist api``), as a client uses it.

Each test works in namespaces of its own on the module's one server.
"""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import text
from sqlalchemy.orm import Session

from serving import SearchAnswer
from serving.api import worker_pool_size
from storage.keys import key_hash
from storage.operations.access import fold_accesses
from storage.public_ids import PublicIds
from storage.server.scoped import SERVING_ROLE
from tests.serving.conftest import ARCHIVIST, LISTENING, Served, wait_for_line
from tests.storage.memory_factory import put

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_search_returns_the_namespaces_memories_with_provenance(served: Served) -> None:
    ids = served.shown(
        *put(served.store, "prov", ["the dentist moved to Friday 3pm", "oat milk"], AT)
    )
    put(served.store, "prov2", ["the dentist of a look-alike namespace"], AT)
    with served.client(served.key("prov")) as client:
        reply = client.post("/v1/namespaces/prov/search", json={"query": "dentist?", "limit": 5})
    assert reply.status_code == 200, reply.text
    hits = reply.json()["hits"]
    assert [h["memory_id"] for h in hits][:1] == [ids[0]]
    assert all(h["memory_id"] in ids for h in hits)
    first = hits[0]
    assert first["content"] == "the dentist moved to Friday 3pm"
    assert first["message_ids"] == ["m0"] and first["occurred_at"] == AT.isoformat()
    assert {"session_id", "score", "kind", "tier", "low_confidence"} <= set(first)
    assert [h["label"] for h in hits] == [f"[Memory {n}]" for n in range(1, len(hits) + 1)]
    assert reply.json()["sources"].startswith(
        f"Sources: [Memory 1] memory {ids[0]} (messages m0, 2026-11-20 12:00 UTC)"
    )
    assert reply.json()["sources"].count("[Memory") == len(hits)
    documented = SearchAnswer.model_validate(reply.json())  # the answer the schema documents
    assert set(first) == set(type(documented.hits[0]).model_fields) - {"doc"}


def test_a_search_counts_each_hit_once_in_its_namespace_until_and_after_a_fold(
    served: Served,
) -> None:
    (mine,) = put(served.store, "acc", ["the plumber comes on Monday"], AT)
    (theirs,) = put(served.store, "acc2", ["the plumber comes on Monday"], AT)
    with served.client(served.key("acc")) as client:
        reply = client.post("/v1/namespaces/acc/search", json={"query": "plumber", "limit": 5})
        (shown,) = served.shown(mine)
        assert [h["memory_id"] for h in reply.json()["hits"]] == [shown]
        pending = client.get(f"/v1/namespaces/acc/memories/{shown}").json()
        with Session(served.store.engine) as session, session.begin():
            fold_accesses(session, "acc")
        folded = client.get(f"/v1/namespaces/acc/memories/{shown}").json()
    with served.store.engine.connect() as conn:
        counts = dict(
            conn.execute(
                text("SELECT id, access_count FROM memories WHERE id IN (:a, :b)"),
                {"a": mine, "b": theirs},
            )
            .tuples()
            .all()
        )
    assert pending["access_count"] == folded["access_count"] == 1
    assert pending["last_accessed_at"] == folded["last_accessed_at"] is not None
    assert counts == {mine: 1, theirs: 0}


def test_time_range_and_kinds_narrow_the_search(served: Served) -> None:
    old = put(served.store, "narrow", ["the dentist in spring"], AT - timedelta(days=200))
    new = put(served.store, "narrow", ["the dentist in autumn"], AT, kind="preference")
    body = {
        "query": "dentist",
        "start": (AT - timedelta(days=1)).isoformat(),
        "end": (AT + timedelta(hours=1)).isoformat(),
    }
    with served.client(served.key("narrow")) as client:
        recent = client.post("/v1/namespaces/narrow/search", json=body).json()["hits"]
        kinds = client.post(
            "/v1/namespaces/narrow/search", json={"query": "dentist", "kinds": ["fact"]}
        ).json()["hits"]
    assert [h["memory_id"] for h in recent] == served.shown(*new)
    assert [h["memory_id"] for h in kinds] == served.shown(*old)


def test_no_key_a_wrong_key_and_a_revoked_key_get_401(served: Served) -> None:
    key = served.key("guarded")
    body = {"query": "anything"}
    with served.client() as anonymous:
        missing = anonymous.post("/v1/namespaces/guarded/search", json=body)
    with served.client(key[:-1] + ("A" if key[-1] != "A" else "B")) as wrong:
        unknown = wrong.post("/v1/namespaces/guarded/search", json=body)
    with served.client(key) as client:
        assert client.post("/v1/namespaces/guarded/search", json=body).status_code == 200
        subprocess.run(
            [ARCHIVIST, "keys", "revoke", str(_key_id(served, key))],
            env=served.environment(),
            check=True,
            capture_output=True,
        )
        revoked = client.post("/v1/namespaces/guarded/search", json=body)
    for reply in (missing, unknown, revoked):
        assert reply.status_code == 401
        assert reply.headers["www-authenticate"] == "Bearer"
    assert "Authorization: Bearer" in missing.json()["error"]
    assert revoked.json() == {"error": "unknown or revoked key"}


def test_a_key_is_judged_before_the_body(served: Served) -> None:
    key = served.key("judged")
    wrong = key[:-1] + ("A" if key[-1] != "A" else "B")
    bad = {"query": "x", "limit": "many"}
    with served.client(wrong) as client:
        unknown = client.post("/v1/namespaces/judged/search", json=bad)
        memo = client.post("/v1/namespaces/judged/memories", json={"kind": "note"})
        unknown_path = client.post("/v1/namespaces/bad name!/search", json=bad)
    with served.client() as client:  # no Authorization header at all
        keyless = [
            client.post("/v1/namespaces/judged/search", json=bad),
            client.post("/v1/namespaces/judged/memories", json={"kind": "note"}),
            client.post("/v1/namespaces/bad name!/search", json=bad),
            client.get("/v1/namespaces/judged/memories/abc"),
            client.post(
                "/v1/namespaces/judged/search",
                content=b'{"query": "caf\xe9"}',
                headers={"content-type": "application/json"},
            ),
        ]
    with served.client(key) as client:
        invalid = client.post("/v1/namespaces/judged/search", json=bad)
    for reply in (unknown, memo, unknown_path):
        assert reply.status_code == 401
        assert reply.json() == {"error": "unknown or revoked key"}
    for reply in keyless:
        assert reply.status_code == 401, reply.text
        assert "Authorization: Bearer" in reply.json()["error"]
    assert invalid.status_code == 422 and "limit" in invalid.json()["error"]


def test_a_body_that_cannot_be_read_says_what_to_send(served: Served) -> None:
    search = "/v1/namespaces/unread/search"
    deep = b'{"query": "x", "kinds": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    bodies = {
        "body: send JSON with Content-Type: application/json, not text/plain": (
            b'{"query": "x"}',
            "text/plain",
        ),
        "body: send JSON with Content-Type: application/json, not application/x-www-form": (
            b"query=x",
            "application/x-www-form-urlencoded",
        ),
        "body: not valid UTF-8 (byte 14); send JSON encoded as UTF-8": (
            b'{"query": "caf\xe9"}',  # latin-1
            "application/json",
        ),
        "body: not valid UTF-8 (byte 11); send JSON encoded as UTF-8": (
            b'{"query": "\xff\xfe"}',
            "application/json",
        ),
        "body: JSON nested too deeply; send arrays and objects a few levels deep": (
            deep,
            "application/json",
        ),
    }
    with served.client(served.key("unread")) as client:
        for message, (body, media) in bodies.items():
            reply = client.post(search, content=body, headers={"content-type": media})
            assert reply.status_code == 422, (message, reply.text)
            assert message in reply.json()["error"], (message, reply.text)
        assert client.post(search, json={"query": "x"}).status_code == 200


def test_another_namespace_and_a_read_only_write_get_403_and_are_audited(served: Served) -> None:
    (bobs,) = served.shown(*put(served.store, "bob-403", ["bob's secret"], AT))
    with served.client(served.key("alice-403", read_only=True)) as client:
        other = client.post("/v1/namespaces/bob-403/search", json={"query": "secret"})
        read = client.get(f"/v1/namespaces/bob-403/memories/{bobs}")
        write = client.post("/v1/namespaces/alice-403/memories", json={"content": "a note"})
    assert (other.status_code, read.status_code, write.status_code) == (403, 403, 403)
    assert other.json() == {"error": "this key is for another namespace than 'bob-403'"}
    assert write.json() == {"error": "this key is read-only"}
    with served.store.engine.connect() as conn:
        refused = conn.execute(
            text("SELECT namespace, details->>'reason' FROM audit_log WHERE action = 'refused'")
        ).all()
    assert sorted(map(tuple, refused)).count(("alice-403", "other_namespace")) == 2
    assert ("alice-403", "read_only") in refused


def test_get_pin_unpin_forget_one_memory(served: Served) -> None:
    real = put(served.store, "own", ["first", "second"], AT)
    (theirs_real,) = put(served.store, "own2", ["another namespace's memory"], AT)
    mine, (theirs,) = served.shown(*real), served.shown(theirs_real)
    key = served.key("own")
    base = "/v1/namespaces/own/memories"
    with served.client(key) as client:
        got = client.get(f"{base}/{mine[0]}").json()
        assert (got["memory_id"], got["content"], got["pinned"]) == (mine[0], "first", False)
        assert client.post(f"{base}/{mine[0]}/pin").json() == {"memory_id": mine[0], "pinned": True}
        assert client.get(f"{base}/{mine[0]}").json()["pinned"] is True
        assert client.post(f"{base}/{mine[0]}/unpin").json()["pinned"] is False
        assert client.delete(f"{base}/{mine[1]}").json() == {"memory_id": mine[1], "deleted": True}
        gone = client.get(f"{base}/{mine[1]}")
        foreign = [
            client.get(f"{base}/{theirs}"),
            client.post(f"{base}/{theirs}/pin"),
            client.delete(f"{base}/{theirs}"),
        ]
        unknown = client.delete(f"{base}/999999")
        raw = client.get(f"{base}/{real[0]}")  # a real id is no public one
    assert raw.status_code == 404 and real[0] not in mine
    assert gone.status_code == 404 and gone.json() == {
        "error": f"no memory {mine[1]} in namespace 'own'"
    }
    assert [r.status_code for r in foreign] == [404, 404, 404]
    assert unknown.status_code == 404
    with served.store.engine.connect() as conn:
        assert (
            conn.execute(
                text("SELECT pinned FROM memories WHERE id = :id"), {"id": theirs_real}
            ).scalar()
            is False
        )
        audit = conn.execute(
            text("SELECT actor, action, target FROM audit_log WHERE namespace = 'own' ORDER BY id")
        ).all()
    assert [(a.action, a.target) for a in audit] == [
        ("pin", f"memory:{real[0]}"),  # the audit log keeps the real ids
        ("unpin", f"memory:{real[0]}"),
        ("forget_memory", f"memory:{real[1]}"),
    ]
    assert {a.actor for a in audit} == {f"key:{_key_id(served, key)}"}


def test_remember_goes_through_the_queue_once_per_idempotency_key(served: Served) -> None:
    body = {"content": "Prefers window seats on long flights", "kind": "preference"}
    with served.client(served.key("writer")) as client:
        first = client.post(
            "/v1/namespaces/writer/memories", json={**body, "idempotency_key": "k1"}
        )
        again = client.post(
            "/v1/namespaces/writer/memories", json={**body, "idempotency_key": "k1"}
        )
        assert first.status_code == 202 and first.json()["duplicate"] is False
        assert again.json() == {**first.json(), "duplicate": True}
        assert client.get("/v1/namespaces/writer/queue").json()["pending"] == 1
        subprocess.run(
            [ARCHIVIST, "worker", "--once"],
            env=served.environment(),
            check=True,
            capture_output=True,
        )
        queue = client.get("/v1/namespaces/writer/queue").json()
        hits = client.post("/v1/namespaces/writer/search", json={"query": "window seat"}).json()
    assert (queue["pending"], queue["completed"]) == (0, 1)
    assert [(h["kind"], h["content"]) for h in hits["hits"]] == [("preference", body["content"])]


def test_prime_and_episodes(served: Served) -> None:
    put(served.store, "primed", ["Alice's sister Maya lives in Lisbon"], AT)
    with served.client(served.key("primed")) as client:
        primed = client.post("/v1/namespaces/primed/prime", json={"message": "Maya is visiting"})
        episodes = client.get("/v1/namespaces/primed/episodes", params={"limit": 3})
    assert primed.status_code == 200
    assert "Maya lives in Lisbon" in primed.json()["formatted"]
    assert primed.json()["facts"][0]["message_ids"] == ["m0"]
    assert primed.json()["facts"][0]["label"] == "[Memory 1]"
    assert "- [Memory 1] Alice's sister Maya lives in Lisbon" in primed.json()["formatted"]
    assert primed.json()["sources"].startswith("Sources: [Memory 1] memory ")
    assert episodes.json() == {"namespace": "primed", "episodes": []}


def test_a_budgeted_search_and_priming_fit_their_tokens_and_say_how_many(served: Served) -> None:
    from storage.embedding import count_tokens

    lines = [
        f"Trip note {i}: the ferry to island {i} leaves at 0{i % 9}:15 from pier {i}"
        for i in range(30)
    ]
    put(served.store, "budget", lines, AT)
    with served.client(served.key("budget")) as client:
        plain = client.post("/v1/namespaces/budget/search", json={"query": "ferry pier"})
        fitted = client.post(
            "/v1/namespaces/budget/search", json={"query": "ferry pier", "budget_tokens": 200}
        )
        primed = client.post(
            "/v1/namespaces/budget/prime", json={"message": "ferry", "budget_tokens": 120}
        )

    assert plain.status_code == 200 and "tokens_used" not in plain.json()
    assert all(h["passage"] and h["content"] for h in plain.json()["hits"])
    answer = fitted.json()
    assert fitted.status_code == 200 and answer["budget_tokens"] == 200
    assert 0 < answer["tokens_used"] <= 200
    assert answer["tokens_used"] == count_tokens([answer["context"]])[0]
    assert answer["context"].endswith(answer["sources"]) and answer["left_out"] > 0
    assert [h["label"] for h in answer["hits"]] == [
        f"[Memory {n}]" for n in range(1, len(answer["hits"]) + 1)
    ]
    prime = primed.json()
    assert primed.status_code == 200 and prime["budget_tokens"] == 120
    assert 0 < prime["tokens_used"] <= 120
    assert prime["tokens_used"] == count_tokens([prime["formatted"]])[0]


def test_a_budgeted_search_shows_public_ids_and_counts_the_kept_hits_by_the_stores(
    served: Served,
) -> None:
    stored = put(
        served.store, "kept", [f"the ferry to island {i} leaves at 9" for i in range(3)], AT
    )
    (theirs,) = put(served.store, "kept2", ["the ferry to island 0 leaves at 9"], AT)
    with served.client(served.key("kept")) as client:
        reply = client.post(
            "/v1/namespaces/kept/search", json={"query": "ferry island", "budget_tokens": 300}
        )
    assert reply.status_code == 200, reply.text
    shown = [h["memory_id"] for h in reply.json()["hits"]]
    assert sorted(shown) == sorted(served.shown(*stored))  # public ids, each memory once
    with served.store.engine.connect() as conn:
        pending = "SELECT memory_id, hits FROM memory_access_pending WHERE namespace LIKE 'kept%'"
        counted = dict(conn.execute(text(pending)).tuples().all())
        logged = conn.execute(
            text("SELECT memory_ids FROM memory_access_log WHERE namespace = 'kept'")
        ).scalar_one()
    assert counted == {real: 1 for real in stored}  # the store's ids, never the public ones
    assert sorted(logged) == sorted(stored) and theirs not in counted


def test_bad_input_gets_one_clear_error(served: Served) -> None:
    (mine,) = served.shown(*put(served.store, "strict", ["something"], AT))
    with served.client(served.key("strict")) as client:
        search = "/v1/namespaces/strict/search"
        cases = {
            "limit: Input should be a valid integer": client.post(
                search, json={"query": "x", "limit": "many"}
            ),
            "limit 5000 out of range 1..100 (ARCHIVIST_RETRIEVAL__MAX_LIMIT)": client.post(
                search, json={"query": "x", "limit": 5000}
            ),
            "empty query: say what to search for": client.post(search, json={"query": "  "}),
            "query: String should have at most 10000 characters": client.post(
                search, json={"query": "q" * 10_001}
            ),
            "colour: Extra inputs are not permitted": client.post(
                search, json={"query": "x", "colour": "red"}
            ),
            "unknown kind(s) ['memo']": client.post(search, json={"query": "x", "kinds": ["memo"]}),
            "give both start and end, or neither": client.post(
                search, json={"query": "x", "start": AT.isoformat()}
            ),
            "body: Input should be a valid dictionary": client.post(search, json=["x"]),
            "body: not valid JSON: Unterminated string starting at (character 10)": (
                client.post(
                    search, content=b'{"query": "x', headers={"content-type": "application/json"}
                )
            ),
            "budget_tokens: a token budget must be 1 to 100000, not 0": client.post(
                search, json={"query": "x", "budget_tokens": 0}
            ),
            "message: holds a NUL character (U+0000)": client.post(
                "/v1/namespaces/strict/prime", json={"message": "hi\x00"}
            ),
            "content: String should have at most 20000 characters": client.post(
                "/v1/namespaces/strict/memories", json={"content": "c" * 20_001}
            ),
            "content is blank": client.post(
                "/v1/namespaces/strict/memories", json={"content": " "}
            ),
            "importance: Input should be less than or equal to 1": client.post(
                "/v1/namespaces/strict/memories", json={"content": "c", "importance": 7}
            ),
            "memory_id: Input should be a valid integer": client.get(
                "/v1/namespaces/strict/memories/abc"
            ),
            "limit: Input should be less than or equal to 50": client.get(
                "/v1/namespaces/strict/episodes", params={"limit": 500}
            ),
            "namespace: String should match pattern": client.post(
                "/v1/namespaces/bad%20name/search", json={"query": "x"}
            ),
        }
        for message, reply in cases.items():
            assert reply.status_code == 422, (message, reply.text)
            assert message in reply.json()["error"], (message, reply.text)
            assert "Traceback" not in reply.text
        assert client.get(f"/v1/namespaces/strict/memories/{mine}").status_code == 200


def test_a_body_over_the_limit_is_refused_before_it_is_read(served: Served) -> None:
    limit = served.settings.serving.max_body_bytes
    with served.client(served.key("big")) as client:
        declared = client.post(
            "/v1/namespaces/big/search",
            content=b'{"query": "' + b"a" * limit + b'"}',
            headers={"content-type": "application/json"},
        )
        chunked = client.post(
            "/v1/namespaces/big/search",
            content=iter([b'{"query": "', b"a" * limit, b'"}']),
            headers={"content-type": "application/json"},
        )
        small_chunked = client.post(
            "/v1/namespaces/big/search",
            content=iter([b'{"query": ', b'"dentist"}']),
            headers={"content-type": "application/json"},
        )
    for reply in (declared, chunked):
        assert reply.status_code == 413
        assert reply.json()["error"] == (
            f"request body over {limit} bytes (ARCHIVIST_SERVING__MAX_BODY_BYTES)"
        )
    assert small_chunked.status_code == 200, small_chunked.text


def test_health_docs_and_the_role_that_serves(served: Served) -> None:
    with served.client() as client:
        health = client.get("/v1/health").json()
        docs = client.get("/docs")
        redoc = client.get("/redoc")
        # Offline: every script and style of the two pages comes from the API itself.
        assets = re.findall(r'(?:src|href)="([^"]+)"', docs.text + redoc.text)
        fetched = {url: client.get(url) for url in assets if not url.startswith("/openapi")}
        schema = client.get("/openapi.json").json()
        missing = client.get("/v1/nothing")
    assert health["role"] == "archivist_serving" and health["row_level_security"] is True
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert redoc.status_code == 200 and "redoc" in redoc.text.lower()
    assert {url.rsplit("/", 1)[-1] for url in fetched} >= {
        "swagger-ui-bundle.js",
        "swagger-ui.css",
        "redoc.standalone.js",
    }
    assert all(url.startswith("/") for url in fetched), assets
    assert all(reply.status_code == 200 and reply.content for reply in fetched.values())
    search = schema["paths"]["/v1/namespaces/{namespace}/search"]["post"]
    assert search["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SearchRequest"
    }
    answer = search["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer == {"$ref": "#/components/schemas/SearchAnswer"}
    assert search["security"] == [{"HTTPBearer": []}]
    assert missing.status_code == 404 and missing.json() == {"error": "Not Found"}


def test_a_key_is_never_written_to_the_log_or_the_audit(served: Served) -> None:
    key = served.key("quiet")
    with served.client(key) as client:
        client.post("/v1/namespaces/quiet/memories", json={"content": "a note"})
        client.post("/v1/namespaces/other-quiet/search", json={"query": "x"})
    with httpx.Client(base_url=served.url) as client:
        client.post("/v1/namespaces/quiet/search", headers={"Authorization": f"Bearer {key}x"})
    assert key not in served.log.read_text()
    with served.store.engine.connect() as conn:
        rows = conn.execute(text("SELECT row_to_json(a)::text FROM audit_log a")).scalars().all()
    assert rows and not any(key in row or key_hash(key) in row for row in rows)


def _key_id(served: Served, key: str) -> int:
    with served.store.engine.connect() as conn:
        found = conn.execute(
            text("SELECT id FROM api_keys WHERE key_hash = :h"), {"h": key_hash(key)}
        ).scalar_one()
    return int(found)


def test_search_mixes_document_chunks_in_with_their_provenance(served: Served, tmp_path) -> None:
    from tests.tasks.documents.test_ingest import ingest, write_samples

    write_samples(tmp_path / "kb")
    ingest(served.store, str(tmp_path / "kb"), ns="docs", tag="home")
    ingest(served.store, str(tmp_path / "kb"), ns="docs2")
    put(served.store, "docs", ["the bicycle chain snapped on Tuesday"], AT)
    with served.client(served.key("docs")) as client:
        mixed = client.post("/v1/namespaces/docs/search", json={"query": "bicycle chain"})
        alone = client.post(
            "/v1/namespaces/docs/search", json={"query": "bicycle chain", "kinds": ["doc"]}
        )
    assert mixed.status_code == alone.status_code == 200, mixed.text
    kinds = {h["kind"] for h in mixed.json()["hits"]}
    assert {"doc", "fact"} <= kinds
    docs = alone.json()["hits"]
    assert docs and all(h["kind"] == "doc" and h["memory_id"] is None for h in docs)
    first = docs[0]["doc"]
    assert first["title"] == "Bicycle care" and first["tag"] == "home"
    assert first["uri"].endswith("bike.html") and first["char_end"] > first["char_start"]
    with served.store.engine.connect() as conn:
        ids = PublicIds.load(conn)
        real = ids.take("document", first["document_id"])  # the API shows public ids
        owner = conn.execute(
            text("SELECT namespace FROM documents WHERE id = :id"), {"id": real}
        ).scalar_one()
    assert owner == "docs"  # never the look-alike's copy of the same files
    assert real != first["document_id"]


def test_workers_share_the_apis_pool() -> None:
    assert [worker_pool_size(16, n) for n in (1, 2, 3, 4)] == [16, 8, 6, 4]
    assert worker_pool_size(1, 4) == 1  # never a process without a connection


def test_the_api_runs_with_the_serving_url_alone(served: Served, tmp_path) -> None:
    """No owner's or pipeline's URL in the process: it logs in as the serving role, and
    (its data directory empty) starts no database server of its own."""
    (mine,) = put(served.store, "lone", ["the boiler is serviced in March"], AT)
    url = served.store.engine.url.set(username=SERVING_ROLE).render_as_string(hide_password=False)
    env = {k: v for k, v in served.environment().items() if k != "ARCHIVIST_DATABASE_URL"}
    env |= {"ARCHIVIST_SERVING__DATABASE_URL": url, "ARCHIVIST_DATA_DIR": str(tmp_path / "data")}
    log = tmp_path / "api.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [ARCHIVIST, "api", "--port", "0"], env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        base = wait_for_line(process, log, LISTENING)
        key = served.key("lone")
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as client:
            health = client.get("/v1/health").json()
            found = client.post("/v1/namespaces/lone/search", json={"query": "boiler"}).json()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert health["role"] == SERVING_ROLE
    assert [h["memory_id"] for h in found["hits"]] == served.shown(mine)
    assert not (tmp_path / "data" / "pgdata").exists()
