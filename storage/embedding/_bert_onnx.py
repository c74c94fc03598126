"""A BERT encoder as an ONNX graph, built in memory from a checkpoint's safetensors.

The packaged all-MiniLM-L6-v2 ships PyTorch-style weights only, and ONNX Runtime needs a
graph. Exporting one takes PyTorch at run time (7 s to import) and downloading one takes a
network; this module writes the graph itself, with standard opset-17 operators, from the
weights in the package: token, position and type embeddings, then per layer self-attention
and a GELU feed-forward, each followed by a residual LayerNorm. ONNX Runtime's optimiser
fuses the scaled scores' product and the GELU at load. The output is the last hidden state;
pooling is the caller's. The query form (``query``, one text a run) has ONNX Runtime's
MultiHeadAttention and returns the sentence vector itself.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

OPSET = 17


@dataclass(frozen=True)
class BertShape:
    """The sizes a BERT checkpoint's ``config.json`` declares."""

    layers: int
    heads: int
    hidden: int
    eps: float

    @classmethod
    def read(cls, config: Path) -> BertShape:
        raw = json.loads(config.read_text("utf-8"))
        if raw.get("model_type") != "bert" or raw.get("hidden_act") != "gelu":
            raise ValueError(f"{config}: not a BERT encoder with exact GELU")
        return cls(
            raw["num_hidden_layers"],
            raw["num_attention_heads"],
            raw["hidden_size"],
            float(raw["layer_norm_eps"]),
        )


class _Graph:
    """Nodes and initializers under construction, with fresh names.

    Each initializer is made in the model's graph, where it stays, with the fields
    ``numpy_helper.from_array`` gives it: ``make_graph`` and ``make_model`` copied all 90 MB
    of weights once each."""

    def __init__(self) -> None:
        self.model = onnx.ModelProto()
        self.nodes: list[onnx.NodeProto] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        tensor = self.model.graph.initializer.add()
        tensor.dims.extend(value.shape)
        tensor.name = name
        tensor.raw_data = numpy_helper.tobytes_little_endian(value)
        tensor.data_type = helper.np_dtype_to_tensor_dtype(value.dtype)
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{kind.lower()}_{self._count}"
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, prefix: str, w: dict[str, np.ndarray]) -> str:
        """x @ W^T + b of a torch ``Linear`` named ``prefix``."""
        weight = self.const(f"{prefix}.wt", np.ascontiguousarray(w[f"{prefix}.weight"].T))
        bias = self.const(f"{prefix}.b", w[f"{prefix}.bias"])
        return self.op("Add", self.op("MatMul", x, weight), bias)

    def norm(self, x: str, prefix: str, w: dict[str, np.ndarray], eps: float) -> str:
        gamma = self.const(f"{prefix}.g", w[f"{prefix}.weight"])
        beta = self.const(f"{prefix}.beta", w[f"{prefix}.bias"])
        return self.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=eps)


def build_encoder(folder: Path, *, query: bool = False) -> bytes:
    """The serialised ONNX model of the BERT checkpoint in ``folder``.

    Inputs ``input_ids`` and ``attention_mask`` (int64, batch x tokens); output
    ``hidden`` (float32, batch x tokens x hidden size).

    ``query``: the graph of one text alone (a search's query), which needs no mask: input
    ``input_ids`` only, output ``vector``, the tokens' mean L2-normalised (batch x hidden
    size). Each layer's query, key and value projections are one product of the three
    weights side by side, and its attention ONNX Runtime's ``MultiHeadAttention``: 4
    nodes a layer where the reshapes, transposes and mask of the general graph took 16.
    """
    shape = BertShape.read(folder / "config.json")
    w = load_file(str(folder / "model.safetensors"))
    g = _Graph()
    x = _embeddings(g, w, shape)
    bias = None if query else _mask_bias(g)
    for layer in range(shape.layers):
        x = _layer(g, w, shape, f"encoder.layer.{layer}", x, bias)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"])]
    opsets = [helper.make_opsetid("", OPSET)]
    if query:
        pooled = g.op("ReduceMean", x, axes=[1], keepdims=0)
        g.nodes.append(helper.make_node("LpNormalization", [pooled], ["vector"], axis=-1, p=2))
        outputs = [helper.make_tensor_value_info("vector", TensorProto.FLOAT, ["batch", None])]
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    else:
        g.nodes.append(helper.make_node("Identity", [x], ["hidden"]))
        mask = helper.make_tensor_value_info(
            "attention_mask", TensorProto.INT64, ["batch", "tokens"]
        )
        inputs.append(mask)
        outputs = [
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", None])
        ]
    model = g.model
    model.ir_version = 8
    model.opset_import.extend(opsets)
    graph = model.graph
    graph.node.extend(g.nodes)
    graph.name = "bert_encoder"
    graph.input.extend(inputs)
    graph.output.extend(outputs)
    # Checked as returned: checking the model serialised it a second time. With the weights
    # copied once, a build took 0.26 s of CPU instead of 0.48 (most of it page faults), for
    # the same bytes.
    serialised: bytes = model.SerializeToString()
    onnx.checker.check_model(serialised)
    return serialised


def _embeddings(g: _Graph, w: dict[str, np.ndarray], shape: BertShape) -> str:
    words = g.op("Gather", g.const("word", w["embeddings.word_embeddings.weight"]), "input_ids")
    tokens = g.op("Gather", g.op("Shape", "input_ids"), g.const("one", np.array(1, np.int64)))
    start, step = g.const("zero", np.array(0, np.int64)), "one"
    positions = g.op("Range", start, tokens, step)
    table = g.const("position", w["embeddings.position_embeddings.weight"])
    placed = g.op("Add", words, g.op("Gather", table, positions))
    kind = g.const("token_type", w["embeddings.token_type_embeddings.weight"][0])
    return g.norm(g.op("Add", placed, kind), "embeddings.LayerNorm", w, shape.eps)


def _mask_bias(g: _Graph) -> str:
    """0 where a token is attended to, a large negative number over padding: batch,1,1,T."""
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    ones = g.const("ones", np.array(1.0, np.float32))
    blocked = g.op("Mul", g.op("Sub", ones, mask), g.const("neg", np.array(-1e9, np.float32)))
    return g.op("Unsqueeze", blocked, g.const("axes12", np.array([1, 2], np.int64)))


def _layer(
    g: _Graph, w: dict[str, np.ndarray], shape: BertShape, p: str, x: str, bias: str | None
) -> str:
    """One encoder layer; ``bias`` the mask's (`_mask_bias`), None for one unpadded text."""
    if bias is None:
        context = _packed_attention(g, w, shape, p, x)
    else:
        context = _attention(g, w, shape, p, x, bias)
    attended = g.linear(context, f"{p}.attention.output.dense", w)
    x = g.norm(g.op("Add", x, attended), f"{p}.attention.output.LayerNorm", w, shape.eps)
    inner = g.linear(x, f"{p}.intermediate.dense", w)
    root2 = g.const(f"{p}.root2", np.array(math.sqrt(2.0), np.float32))
    half = g.const(f"{p}.half", np.array(0.5, np.float32))
    ones = g.const(f"{p}.one", np.array(1.0, np.float32))
    erf = g.op("Erf", g.op("Div", inner, root2))
    gelu = g.op("Mul", g.op("Mul", inner, half), g.op("Add", erf, ones))
    out = g.linear(gelu, f"{p}.output.dense", w)
    return g.norm(g.op("Add", x, out), f"{p}.output.LayerNorm", w, shape.eps)


def _attention(
    g: _Graph, w: dict[str, np.ndarray], shape: BertShape, p: str, x: str, bias: str
) -> str:
    """Self-attention over a padded batch, heads merged again: batch x tokens x hidden."""
    per_head = shape.hidden // shape.heads
    split = g.const(f"{p}.split", np.array([0, 0, shape.heads, per_head], np.int64))
    joined = g.const(f"{p}.join", np.array([0, 0, shape.hidden], np.int64))

    def heads(name: str, perm: list[int]) -> str:
        projected = g.linear(x, f"{p}.attention.self.{name}", w)
        return g.op("Transpose", g.op("Reshape", projected, split), perm=perm)

    q, k, v = heads("query", [0, 2, 1, 3]), heads("key", [0, 2, 3, 1]), heads("value", [0, 2, 1, 3])
    scale = g.const(f"{p}.scale", np.array(1 / math.sqrt(per_head), np.float32))
    scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
    context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
    return g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), joined)


def _packed_attention(g: _Graph, w: dict[str, np.ndarray], shape: BertShape, p: str, x: str) -> str:
    """Self-attention over every token: the three projections as one product, split, then
    ``MultiHeadAttention`` (ONNX Runtime's, scaled by 1/sqrt(head size) as `_attention`)."""
    names = [f"{p}.attention.self.{name}" for name in ("query", "key", "value")]
    weight = np.concatenate([w[f"{n}.weight"].T for n in names], axis=1)
    bias = np.concatenate([w[f"{n}.bias"] for n in names])
    packed = g.const(f"{p}.attention.self.qkv.wt", np.ascontiguousarray(weight))
    projected = g.op("Add", g.op("MatMul", x, packed), g.const(f"{p}.attention.self.qkv.b", bias))
    sizes = g.const(f"{p}.qkv_sizes", np.array([shape.hidden] * 3, np.int64))
    outs = [f"{p}.{part}" for part in ("q", "k", "v")]
    g.nodes.append(helper.make_node("Split", [projected, sizes], outs, axis=-1))
    return g.op("MultiHeadAttention", *outs, domain="com.microsoft", num_heads=shape.heads)
