"""Rebuild a trainable ``SupportModel`` from the shipped int8 ONNX file (its weights dequantized).

The shipped model's torch weights are not kept (``training/.work`` is not in git); a further pass that
starts from the shipped model (``train.py --init``) starts from these. Every quantized weight is read back
as ``(q - zero_point) * scale``: the float model computes what the int8 file computes, up to the activation
quantization the int8 file adds at run time (checked on pairs from the train rows, printed).

    python training/judge/from_onnx.py --out training/.work/model-shipped
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from model import SupportModel  # noqa: E402
from support import SupportModel as OnnxModel  # noqa: E402

SHIPPED = ROOT / "ragtrace" / "judges" / "_assets" / "support-minilm-l6-int8.onnx"
# MatMulInteger's output names say which torch Linear the quantized weight belongs to.
_OUTPUT = re.compile(r"^/(?P<path>.+)/MatMul_output_0_output_quantized$")


def _dequantized(inits: dict[str, np.ndarray], base: str) -> np.ndarray:
    q = inits[f"{base}_quantized"].astype(np.float32)
    return (q - inits[f"{base}_zero_point"].astype(np.float32)) * inits[f"{base}_scale"].astype(np.float32)


def rebuild(path: Path) -> SupportModel:
    graph = onnx.load(str(path)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    state: dict[str, torch.Tensor] = {}
    for name, value in inits.items():
        if not name.endswith(("_quantized", "_scale", "_zero_point")):
            state[name] = torch.from_numpy(value.copy())
    for table in ("word_embeddings", "token_type_embeddings", "position_embeddings"):
        key = f"encoder.embeddings.{table}.weight"
        state[key] = torch.from_numpy(_dequantized(inits, key))
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        weight = node.input[1].removesuffix("_quantized")
        if weight.startswith("head."):
            torch_name = "head.weight"
        else:
            match = _OUTPUT.match(node.output[0])
            if match is None:
                raise ValueError(f"unexpected MatMulInteger output {node.output[0]!r}")
            torch_name = match["path"].replace("/", ".").replace("layer.", "layer.") + ".weight"
        # ONNX multiplies by W^T ([in, out]); torch's Linear stores W ([out, in]).
        state[torch_name] = torch.from_numpy(_dequantized(inits, weight).T.copy())
    model = SupportModel.from_base("claim")
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [m for m in missing if not m.endswith("position_ids")]:
        raise ValueError(f"weights not matched: missing {missing}, unexpected {unexpected}")
    return model.eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnx", type=Path, default=SHIPPED)
    parser.add_argument("--out", type=Path, default=ROOT / "training" / ".work" / "model-shipped")
    args = parser.parse_args()
    model = rebuild(args.onnx)
    model.save(args.out)
    from support import encode_pairs, load_tokenizer

    pairs = [
        ("The Eiffel Tower is in Paris.", "The Eiffel Tower is a landmark in Paris, France, built in 1889."),
        ("The Eiffel Tower is in Rome.", "The Eiffel Tower is a landmark in Paris, France, built in 1889."),
        ("It was built in 1925.", "The Eiffel Tower is a landmark in Paris, France, built in 1889."),
    ]
    with torch.no_grad():
        ours = model(*(torch.from_numpy(a) for a in encode_pairs(load_tokenizer(), pairs))).numpy()
    shipped = OnnxModel(str(args.onnx)).pair_logits(pairs)
    print(f"saved {args.out}; logits torch {np.round(ours, 2)} int8 file {np.round(shipped, 2)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
