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
"""

from __future__ import annotations

import tempfile
from pathlib import Path


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
        quantize_dynamic(model, target, weight_type=QuantType.QInt8, per_channel=True)
        return target.read_bytes()
