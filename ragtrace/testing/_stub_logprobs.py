"""The ``logprobs`` of a stub chat reply, token by token, shaped as OpenAI's ``choices[].logprobs.content``.

Tokens here are single digits, words, runs of white space and punctuation marks. A digit gets
P = 0.7 against its neighbours (0.2 for the next digit, 0.1 for the previous one), so a client
weighting a rating by its tokens' probabilities reads a spread, not a certainty. Given ``yes`` (the
P(yes) of a ``verify_claim`` reply), the first ``yes`` / ``no`` token carries P(yes) against P(no).
Those tokens list up to ``top`` alternatives (at least one); every other token is certain (logprob 0)
and lists only itself.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["token_logprobs"]


def token_logprobs(content: str, top: int, yes: float | None = None) -> list[dict[str, Any]]:
    """Per-token logprobs of ``content``: a digit token gets a spread over neighbouring digits; with
    ``yes`` (a verify_claim reply) the first yes/no token gets P(yes) = ``yes`` against P(no)."""
    tokens: list[dict[str, Any]] = []
    for piece in re.findall(r"\d|\w+|\s+|[^\w\s]", content):
        if yes is not None and piece in ("yes", "no"):
            answers = [("yes", yes), ("no", 1.0 - yes)]
            answers.sort(key=lambda pair: pair[1] if pair[0] == piece else -1.0, reverse=True)
            alternatives = [{"token": t, "logprob": math.log(max(p, 1e-9)), "bytes": None} for t, p in answers]
            tokens.append(
                {
                    "token": piece,
                    "logprob": alternatives[0]["logprob"],
                    "bytes": None,
                    "top_logprobs": alternatives[: max(top, 1)],
                }
            )
            yes = None  # only the answer's token: "contradicted" is written, not weighted
            continue
        if piece.isdigit():
            digit = int(piece)
            spread = [(digit, 0.7), (digit + 1, 0.2), (max(digit - 1, 0), 0.1)]
            alternatives = [{"token": str(d), "logprob": math.log(p), "bytes": None} for d, p in spread][: max(top, 1)]
            tokens.append({"token": piece, "logprob": math.log(0.7), "bytes": None, "top_logprobs": alternatives})
        else:
            tokens.append(
                {
                    "token": piece,
                    "logprob": 0.0,
                    "bytes": None,
                    "top_logprobs": [{"token": piece, "logprob": 0.0, "bytes": None}],
                }
            )
    return tokens
