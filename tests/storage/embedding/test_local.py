"""The local embedder: the published all-MiniLM-L6-v2, offline, as sentence-transformers
computes it, and meaning found where words differ."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from storage.embedding import (
    EmbedOnce,
    LocalEmbedder,
    default_cache_dir,
    make_embedder,
    model_folder,
    verified,
)
from storage.kernel.errors import ConfigurationError
from storage.kernel.settings import EmbeddingSettings, RetrievalSettings
from storage.retrieval import Retriever, SearchOptions
from storage.server.engine import Store
from tests.helpers import add_session, chat, run_sync

TEXTS = [
    "Should I buy new shoes before the race?",
    "what footwear should I get for running",
    "",
    "Wir fahren im Mai für ein langes Wochenende nach Kopenhagen.",
    "¿Podemos mover la cita con el dentista al jueves?",
    "来週の月曜日に歯医者の予約があります。",
    "🙂🙂 ok",
    "The backup job copied the billing volume to the eastern site. " * 40,  # > 256 tokens
]


# The graphs kept in the machine's cache, loaded as a user's embedder loads them after its
# first run: building one took 0.6 s of CPU (float32), 1.5 s (int8) or about 10 s (the
# static int8 graph, calibrated). Building and keeping graphs is test_graph_cache.py's; the
# test that no connection is opened builds them in a process of its own.


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    cache = default_cache_dir()
    return LocalEmbedder(threads=2, batch_tokens=64, cache_dir=cache)  # several batches at once


@pytest.fixture(scope="module")
def local_int8() -> LocalEmbedder:
    return LocalEmbedder(threads=2, batch_tokens=64, cache_dir=default_cache_dir(), graph="int8")


@pytest.fixture(scope="module")
def local_static() -> LocalEmbedder:
    return LocalEmbedder(
        threads=2, batch_tokens=64, cache_dir=default_cache_dir(), graph="int8-static"
    )


# sentence-transformers' own vectors of TEXTS: the venv has no PyTorch (nor
# sentence-transformers), so they were recorded once, with sentence-transformers 6.2.0 on
# torch 2.13.0+cpu, from the same verified files:
#   SentenceTransformer(str(model_folder()), device="cpu").encode(TEXTS, normalize_embeddings=True)
# saved with np.savez_compressed(REFERENCE, texts=np.array(TEXTS), vectors=...).
REFERENCE = Path(__file__).resolve().parents[2] / "data" / "minilm_reference.npz"


def test_vectors_are_sentence_transformers_own(local: LocalEmbedder) -> None:
    reference = np.load(REFERENCE)
    assert reference["texts"].tolist() == TEXTS  # recorded for these very texts
    expected = reference["vectors"]

    got = local.embed(TEXTS)

    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert (got * expected).sum(axis=1).min() >= 0.9999


@pytest.mark.parametrize("graph", ["local", "local_int8", "local_static"])
def test_a_text_gets_the_same_vector_in_any_batch(
    graph: str, request: pytest.FixtureRequest
) -> None:
    embedder: LocalEmbedder = request.getfixturevalue(graph)
    alone = np.stack([embedder.embed([t])[0] for t in TEXTS])
    together = embedder.embed(TEXTS[::-1])[::-1]
    assert np.abs(alone - together).max() < 1e-5
    # Batches of other texts, of other lengths, padded to their longest: still the same.
    crowd = [f"{t} and then some more words, {n} of them" * n for n in range(1, 9) for t in TEXTS]
    mixed = embedder.embed([*crowd, *TEXTS])[len(crowd) :]
    assert np.abs(alone - mixed).max() < 1e-5


def test_the_int8_graph_stores_vectors_close_to_the_model_own_under_its_own_name(
    local: LocalEmbedder, local_int8: LocalEmbedder
) -> None:
    exact = local.embed(TEXTS)

    stored = local_int8.embed(TEXTS)

    assert (local.name, local_int8.name) == ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2/int8")
    assert stored.dtype == np.float32
    assert np.allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-5)
    cosines = (stored * exact).sum(axis=1)
    assert cosines.min() >= 0.95 and cosines.mean() >= 0.98
    assert np.abs(stored - exact).max() > 1e-3  # the int8 graph, not the float32 one
    # Its queries are the int8 graph's too, in its query form: next to the vector stored
    # (int8 rounding flips on float differences of 1e-7), further from float32's.
    queries = np.stack([local_int8.embed_query(t) for t in TEXTS])
    close = (queries * stored).sum(axis=1)
    assert close.min() >= 0.99 and close.mean() >= 0.999
    assert close.mean() > cosines.mean() + 0.005


def test_the_static_int8_graph_stores_vectors_close_to_the_model_own_under_its_own_name(
    local: LocalEmbedder, local_static: LocalEmbedder
) -> None:
    exact = local.embed(TEXTS)

    stored = local_static.embed(TEXTS)

    assert local_static.name == "all-MiniLM-L6-v2/int8-static"
    assert stored.dtype == np.float32
    assert np.allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-5)
    cosines = (stored * exact).sum(axis=1)
    assert cosines.min() >= 0.95 and cosines.mean() >= 0.98
    assert np.abs(stored - exact).max() > 1e-3  # a quantised graph, not the float32 one
    # Batched for storage, yet a query on the same graph gets the very vector stored.
    same = LocalEmbedder(cache_dir=default_cache_dir(), query_graph="int8-static")
    assert np.abs(same.embed_query(TEXTS[1]) - stored[1]).max() < 1e-5


def test_a_query_vector_from_the_int8_graph_stays_close_to_the_model_own(
    local: LocalEmbedder,
) -> None:
    exact = local.embed(TEXTS)

    queries = np.stack([local.embed_query(t) for t in TEXTS])

    assert queries.dtype == np.float32
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    cosines = (queries * exact).sum(axis=1)
    assert cosines.min() >= 0.95 and cosines.mean() >= 0.98  # long, foreign, emoji, empty
    assert np.abs(queries - exact).max() > 1e-3  # another graph: the int8 one
    assert np.array_equal(local.embed_query(TEXTS[0]), queries[0])  # and deterministic


def test_the_float32_query_encoder_gives_the_model_own_vectors() -> None:
    settings = EmbeddingSettings(threads=2, store_encoder="float32", query_encoder="float32")
    embedder = make_embedder(settings)
    assert np.array_equal(embedder.embed_query(TEXTS[1]), embedder.embed([TEXTS[1]])[0])
    with pytest.raises(ValidationError):
        EmbeddingSettings(query_encoder="int4")


def test_weights_are_checked_against_the_published_model(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(model_folder(), copy)
    assert verified(copy) == copy
    with (copy / "model.safetensors").open("r+b") as weights:
        weights.seek(-4, 2)
        weights.write(b"\x00\x00\x80\x3f")  # one float changed
    with pytest.raises(ConfigurationError, match="is not the published all-MiniLM-L6-v2's"):
        verified(copy)


def test_settings_for_the_local_model() -> None:
    assert EmbeddingSettings().provider == "local"
    embedder = make_embedder(EmbeddingSettings(threads=1))  # a new store's: int8-static
    assert isinstance(embedder, EmbedOnce) and isinstance(embedder.inner, LocalEmbedder)
    assert embedder.name == "all-MiniLM-L6-v2/int8-static"
    float32 = EmbeddingSettings(store_encoder="float32")
    assert make_embedder(float32).name == "all-MiniLM-L6-v2"
    assert make_embedder(EmbeddingSettings(store_encoder="int8")).name == "all-MiniLM-L6-v2/int8"
    # auto keeps the graph of the vectors stored: float32's, int8's, else int8-static's
    for graph in ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2/int8", "all-MiniLM-L6-v2/int8-static"):
        assert make_embedder(EmbeddingSettings(), stored=graph).name == graph
    assert make_embedder(EmbeddingSettings(), stored="hashing-v1-384").name.endswith("/int8-static")
    with pytest.raises(ValidationError, match="ARCHIVIST_EMBEDDING__DIM=256"):
        EmbeddingSettings(dim=256)
    with pytest.raises(ValidationError):
        EmbeddingSettings(threads=0)


NO_NETWORK = """
import socket, sys

def deny(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
        raise SystemExit(f"network use: {event} {args!r}")

sys.addaudithook(deny)
if sys.argv[1] == "control":
    socket.create_connection(("192.0.2.1", 80), timeout=0.1)
from storage.embedding import LocalEmbedder
embedder = LocalEmbedder(threads=1)
vectors = embedder.embed(["offline, please", "no model hub"])
query = embedder.embed_query("and a query, on the int8 graph built here")
print(vectors.shape, query.shape)
"""


@pytest.mark.parametrize("mode", ["embed", "control"])
def test_loading_and_embedding_open_no_connection(mode: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    done = subprocess.run(
        [sys.executable, "-c", NO_NETWORK, mode], capture_output=True, text=True, env=env
    )
    if mode == "control":  # the hook does catch a connection
        assert done.returncode != 0 and "network use: socket." in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "(2, 384) (384,)"


NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def test_paraphrases_are_found_on_the_default_install(store: Store, local: LocalEmbedder) -> None:
    start = NOW - timedelta(days=20)
    talks = {
        "race": ("Should I buy new shoes before the race?", "Yes, break them in for two weeks."),
        "trip": ("We booked four nights in Copenhagen for June.", "Nyhavn is lovely then."),
        "car": ("The car needs new tyres before winter.", "Book the garage this week."),
        "work": ("Can you draft the quarterly budget summary?", "Here is a first draft."),
        "food": ("I'm making lasagne for the kids tonight.", "Add spinach, they won't notice."),
    }
    for number, (sid, turns) in enumerate(talks.items()):
        when = start + timedelta(days=number)
        add_session(store, sid, "alice", chat(when, *turns, "Thanks!", "You're welcome."))
        run_sync(store, when.replace(hour=23), embedder=local, min_user_messages=1)
    retriever = Retriever(store.engine, local, RetrievalSettings(), store.settings.tz)

    def first(query: str) -> str:
        hits = retriever.search(
            "alice", query, as_of=NOW, record_access=False, options=SearchOptions(kinds=["turn"])
        )
        assert not hits[0].low_confidence
        return hits[0].content

    assert "new shoes before the race" in first("what footwear should I get for running")
    assert "Copenhagen" in first("vacation to Denmark")
    nonsense = retriever.search("alice", "qwxzv blorptangle", as_of=NOW)
    assert all(h.low_confidence for h in nonsense)  # nothing, or nothing it stands behind
