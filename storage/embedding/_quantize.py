"""The int8 encoder: the local model's graph with its weights in int8, for queries and,
in a store that uses it (``store_encoder``), for the stored vectors.

A search embeds one short text and waits for it. With float32 weights a query took 3.7 ms
of one core here, and 10.5-12.4 ms of the API server's CPU per search under load; with
int8 weights, quantised per output channel, 1.5 ms and about 2 (``bench/api.py``, README).
Its vectors keep a cosine of 0.99 on average with the float32 model's (0.95 at worst, for
fillers such as "thank you"; over the eval set's 2,231 questions and messages), so queries
encoded this way are compared with memories encoded in float32: nothing stored changes,
and the eval set's recall and MRR stayed within 0.01 (``bench/eval.py``). For bulk
embedding it takes 2.0 ms of CPU per chat message instead of 4.7; memories stored from it
kept the eval set's recall@10 within 0.003 of float32's (mean cosine 0.9925 over 26,682
memories, 0.974 at worst). Activations are quantised per call (ONNX Runtime's dynamic
quantisation), so the graph needs no calibration data; per call means per text, for a
text's vector not to depend on its batch (``_local``). Built once per machine and kept
beside the float32 graph (``_graph_cache``).

The static int8 graph (`statically_quantized`) quantises activations with scales fixed
once, from the calibration texts the package ships (``calibration.txt``): a text's
vector is then the same in any batch, and bulk embedding batches texts as float32 did.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def quantized(graph: bytes) -> bytes:
    """``graph`` (a float32 encoder) with its MatMul and Gather weights in int8, one scale
    per output channel. onnx and the quantiser are loaded here only: when building."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load_from_string(graph)
    # quantize_dynamic advises ONNX Runtime's pre-processing on the root logger, and so
    # configures logging for the whole process, unless the model carries this mark. A
    # pre-processed graph was no closer to float32 (mean cosine 0.9926 either way).
    onnx.helper.set_model_props(model, {"onnx.quant.pre_process": "onnxruntime.quant"})
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "int8.onnx"
        quantize_dynamic(
            model,
            target,
            weight_type=QuantType.QInt8,
            per_channel=True,
            # Types past ONNX Runtime's own operators (the query graph's attention), which
            # shape inference does not know: every activation here is float32.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        return target.read_bytes()


# The matrix products whose input a few channels dominate (BERT's LayerNorm outputs carry
# one channel near 30 where the rest stay under 2): the query, key and value projections
# and the feed-forward's first layer. Their input is divided by a per-channel scale and
# their weights' rows multiplied by it (SmoothQuant), which leaves the float32 result as
# it was and lets one int8 scale fit the input.
SMOOTHED = (".attention.self.", ".intermediate.dense.")
SMOOTHING = 0.5  # how much of a channel's range moves into the weights


def statically_quantized(graph: bytes, calibration: Sequence[Sequence[int]]) -> bytes:
    """``graph`` (a float32 encoder) with its weight products in int8: weights with one
    scale per output channel, their inputs with one fixed scale each, the range the
    ``calibration`` token sequences (each run alone) reach, after smoothing (`SMOOTHED`).

    Fixed scales make a text's vector the same alone as in any batch, so bulk embedding
    can batch texts; dynamic quantisation (`quantized`) scales each run's activations
    anew. Products of two activations (attention) and every product's output stay
    float32: the outputs carry the residual stream's outliers (a range of +-200), which
    one int8 scale would flatten (a mean cosine of 0.92 with float32 instead of 0.995)."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    model = onnx.load_from_string(graph)
    for node in model.graph.node:
        node.name = node.name or node.output[0]
    _smooth(model, calibration)
    onnx.helper.set_model_props(model, {"onnx.quant.pre_process": "onnxruntime.quant"})
    weights = {w.name for w in model.graph.initializer}
    between_activations = [
        n.name for n in model.graph.node if n.op_type == "MatMul" and n.input[1] not in weights
    ]

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._inputs = (_inputs([ids]) for ids in calibration)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._inputs, None)

    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "smoothed.onnx", Path(folder) / "static.onnx"
        onnx.save_model(model, str(source))
        quantize_static(
            str(source),
            str(target),
            Reader(),
            quant_format=QuantFormat.QDQ,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=between_activations,
            calibrate_method=CalibrationMethod.MinMax,
            extra_options={"OpTypesToExcludeOutputQuantization": ["MatMul"]},
        )
        quantised = onnx.load(str(target))
    _fuse_biases(quantised)
    return bytes(quantised.SerializeToString())


def _inputs(sequences: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
    ids = np.array(sequences, dtype=np.int64)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids)}


def _smooth(model: Any, calibration: Sequence[Sequence[int]]) -> None:
    """Divide the inputs of the `SMOOTHED` products by s = peak^a / weight peak^(1-a) per
    channel (peak: the largest magnitude the calibration reaches, a = `SMOOTHING`), through
    one new Mul each, and multiply their weights' rows by s."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    weights = {w.name: w for w in model.graph.initializer}
    readers: dict[str, list[Any]] = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and any(part in node.input[1] for part in SMOOTHED):
            readers.setdefault(node.input[0], []).append(node)
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in readers:
        probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), options, ["CPUExecutionProvider"])
    peaks = {name: np.zeros(0, np.float32) for name in readers}
    for ids in calibration:
        for name, value in zip(readers, session.run(list(readers), _inputs([ids])), strict=True):
            peak = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            peaks[name] = np.maximum(peaks[name], peak) if peaks[name].size else peak
    added = []
    for name, nodes in readers.items():
        rows = [numpy_helper.to_array(weights[n.input[1]]) for n in nodes]
        weight_peak = np.max([np.abs(r).max(axis=1) for r in rows], axis=0)
        scale = np.maximum(peaks[name], 1e-5) ** SMOOTHING / np.maximum(weight_peak, 1e-5) ** (
            1 - SMOOTHING
        )
        for node, row in zip(nodes, rows, strict=True):
            smoothed = (row * scale[:, None]).astype(np.float32)
            weights[node.input[1]].CopyFrom(numpy_helper.from_array(smoothed, node.input[1]))
            node.input[0] = f"{name}.smoothed"
        divisor = numpy_helper.from_array((1 / scale).astype(np.float32), f"{name}.smoothing")
        model.graph.initializer.append(divisor)
        added.append(
            helper.make_node(
                "Mul", [name, divisor.name], [f"{name}.smoothed"], name=f"{name}.smoothed"
            )
        )
    _insert_after_producers(model, added)


def _insert_after_producers(model: Any, added: list[Any]) -> None:
    """Put each node of ``added`` right after the node that makes its first input, keeping
    the graph's order topological."""
    after = {node.input[0]: node for node in added}
    ordered = []
    for node in model.graph.node:
        ordered.append(node)
        ordered.extend(after[out] for out in node.output if out in after)
    del model.graph.node[:]
    model.graph.node.extend(ordered)


def _fuse_biases(model: Any) -> None:
    """Each int8 weight product and the bias added to it as one ``MatMulIntegerToFloat``
    node, as ONNX Runtime fuses them in the dynamic graph but not from QDQ nodes: the
    bias Adds and the feed-forward's BiasGelu took a fifth of the static graph's time
    (7 % of its CPU saved, the same vectors)."""
    from onnx import helper

    weights = {w.name for w in model.graph.initializer}
    made = {out: node for node in model.graph.node for out in node.output}
    readers: dict[str, list[Any]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    replaced: dict[str, Any] = {}  # an Add's output: the node that now makes it
    gone: set[str] = set()  # outputs of the products and weight dequantisers replaced
    for node in model.graph.node:
        x, w = (
            (made.get(name) for name in node.input[:2])
            if node.op_type == "MatMul"
            else (None, None)
        )
        after = readers.get(node.output[0], [])
        if not (x and w and x.op_type == w.op_type == "DequantizeLinear" and len(after) == 1):
            continue
        add = after[0]
        bias = [name for name in add.input if name != node.output[0]]
        if add.op_type != "Add" or w.input[0] not in weights or bias[0] not in weights:
            continue
        inputs = [x.input[0], w.input[0], x.input[1], w.input[1], x.input[2], w.input[2], bias[0]]
        replaced[add.output[0]] = helper.make_node(
            "MatMulIntegerToFloat", inputs, [add.output[0]], node.name, domain="com.microsoft"
        )
        gone.update((node.output[0], w.output[0]))
    nodes = [replaced.get(n.output[0], n) for n in model.graph.node if n.output[0] not in gone]
    used = {name for node in nodes for name in node.input} | {o.name for o in model.graph.output}
    nodes = [n for n in nodes if n.op_type != "DequantizeLinear" or n.output[0] in used]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    if all(o.domain != "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
