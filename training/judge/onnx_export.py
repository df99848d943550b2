"""Export a trained model to ONNX and quantize it to int8, as every model the offline judge ships is.

``export.py`` here (the support and relevance models) and ``training/reader/export.py`` (the answer reader) use
it: the same opset, input names and axes, quantization and closing digest, so the shipped files are made alike.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from onnxruntime.quantization import QuantType, quantize_dynamic
from support import INPUTS


@contextmanager
def int8_export(
    model: torch.nn.Module, example: tuple[torch.Tensor, ...], out: Path, outputs: dict[str, dict[int, str]]
) -> Iterator[Path]:
    """Export ``model`` run on ``example`` (the pair inputs of ``support.INPUTS``, dynamic in batch and tokens)
    to a float ONNX file in a temporary directory, quantize it dynamically to int8 weights at ``out``, and
    yield the float file's path while it exists (to compare both exports with torch). ``outputs``: each
    output's name and its dynamic axes. On leaving, prints ``out``'s size and sha256 (what a model card
    names). The caller sets the attention implementation first (eager: it exports as MatMul and Softmax)."""
    with tempfile.TemporaryDirectory() as tmp:
        float_path = Path(tmp) / "float.onnx"
        torch.onnx.export(
            model,
            example,
            str(float_path),
            input_names=list(INPUTS),
            output_names=list(outputs),
            dynamic_axes={name: {0: "batch", 1: "tokens"} for name in INPUTS} | outputs,
            opset_version=17,
            dynamo=False,
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        quantize_dynamic(str(float_path), str(out), weight_type=QuantType.QInt8)
        yield float_path
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, sha256 {digest})")
