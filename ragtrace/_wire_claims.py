"""Claims on the wire: a claim metric's per-claim verdicts as the JSON of ``semconv.EVAL_CLAIMS``.

``encode_claims`` writes what ``ragtrace.wire.encode`` puts on a faithfulness or hallucination event: a JSON
array of ``{"claim": text, "verdict": "supported" | "contradicted" | "unsupported", "chunk": index or
null, "support": probability or null}``, in the answer's order. It is bounded, since an event is sent
with every scored span: at most ``MAX_CLAIMS`` claims (the rest counted in ``EVAL_CLAIMS_OMITTED``), each
claim's text at most ``MAX_CLAIM_CHARS`` characters. Without ``text`` (the span's content was not
captured) the claims go without their text: verdicts, chunks and probabilities say nothing of the
record's words.

``decode_claims`` reads it back for the collector, keeping only well-formed entries: what it returns
is safe to store and render whoever sent it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Final

from ragtrace import semconv
from ragtrace.metrics.claims.claim_verdicts import ClaimVerdict

__all__ = ["MAX_CLAIMS", "MAX_CLAIM_CHARS", "decode_claims", "encode_claims"]

MAX_CLAIMS: Final = 32
"""Claims an event carries at most: an answer of more is rare, and the page shows the first ones."""
MAX_CLAIM_CHARS: Final = 300
"""Characters of a claim's text an event carries at most (a claim is a sentence or a clause)."""
_CUT: Final = "…"


def encode_claims(verdicts: Sequence[ClaimVerdict], *, text: bool) -> tuple[str, int]:
    """The JSON of ``EVAL_CLAIMS`` for ``verdicts`` and how many claims were left out of it."""
    entries: list[dict[str, Any]] = []
    for verdict in verdicts[:MAX_CLAIMS]:
        entry: dict[str, Any] = {}
        if text:
            claim = _plain(verdict.claim)
            entry["claim"] = claim if len(claim) <= MAX_CLAIM_CHARS else claim[: MAX_CLAIM_CHARS - 1] + _CUT
        entry["verdict"] = verdict.verdict
        entry["chunk"] = verdict.chunk
        entry["support"] = None if verdict.support is None else _rounded(float(verdict.support), verdict.verdict)
        entries.append(entry)
    return json.dumps(entries, ensure_ascii=False, separators=(",", ":")), max(0, len(verdicts) - MAX_CLAIMS)


def decode_claims(value: Any) -> list[dict[str, Any]] | None:
    """The well-formed entries of an ``EVAL_CLAIMS`` value (a JSON array, as text or already parsed),
    each ``{"claim": str | None, "verdict", "chunk": int | None, "support": float | None}``; None when the
    value is not such an array. Entries with an unknown verdict are dropped; a claim text is cut to
    ``MAX_CLAIM_CHARS``, a chunk must be a non-negative int and a support a number in [0, 1]."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
            return None
    if not isinstance(value, list):
        return None
    out: list[dict[str, Any]] = []
    for item in value[:MAX_CLAIMS]:
        if not isinstance(item, dict) or item.get("verdict") not in semconv.CLAIM_VERDICTS:
            continue
        claim, chunk, support = item.get("claim"), item.get("chunk"), item.get("support")
        out.append(
            {
                "claim": _plain(claim[:MAX_CLAIM_CHARS]) if isinstance(claim, str) else None,
                "verdict": item["verdict"],
                "chunk": chunk if isinstance(chunk, int) and not isinstance(chunk, bool) and chunk >= 0 else None,
                "support": _unit(support),
            }
        )
    return out


def _rounded(support: float, verdict: str) -> float:
    """``support`` to 4 places, never rounded across 0.5 (a claim not supported stays below it)."""
    value = round(support, 4)
    if verdict != semconv.CLAIM_SUPPORTED and value >= 0.5 > support:
        return 0.4999
    return value


def _plain(text: str) -> str:
    """``text`` with any lone surrogate (a JSON ``\\ud800`` escape decodes to one) replaced by U+FFFD: it could
    not be stored as UTF-8 or sent as a protobuf string, and one claim must not fail a whole export."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if not text.isascii() else text


def _unit(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0.0 <= number <= 1.0 else None
