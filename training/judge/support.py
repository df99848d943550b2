"""Where training finds what the support model reads, and where it writes the model.

The reading functions (windows of a chunk, the windows a claim is read against, pair encoding) and
the ONNX runner are the judge's own (``ragtrace/judges/offline/support``): building pairs, training,
export and evaluation use them, so a model is trained and measured on the pairs the judge feeds it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragtrace.judges.offline.support import (  # noqa: E402
    INPUTS,
    MODEL_ASSET,
    SupportModel,
    best_windows,
    chunk_windows,
    encode_pairs,
    load_tokenizer,
)

MODEL_FILE = ROOT / "training" / ".work" / MODEL_ASSET
"""Where ``export.py`` writes the model (``make judge-model`` then copies it into the package)."""
SHIPPED_FILE = ROOT / "ragtrace" / "judges" / "_assets" / MODEL_ASSET

__all__ = [
    "INPUTS",
    "MODEL_FILE",
    "SHIPPED_FILE",
    "SupportModel",
    "best_windows",
    "chunk_windows",
    "encode_pairs",
    "load_tokenizer",
]
