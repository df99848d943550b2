"""Judges: who answers the metrics' steps. See ``ragtrace.judges._base`` for the protocol.

- ``openai/``: ``OpenAIJudge``, any OpenAI-compatible endpoint (its transport, retries, steps and prompts).
- ``offline/``: ``OfflineJudge``, a local model and rules, no network.
- ``tiered/``: ``TieredJudge``, the offline judge first and an LLM on the doubtful records.
- ``BaseJudge``: the base for a judge of your own (write ``name`` and the steps it answers).
"""

from typing import TYPE_CHECKING

from ragtrace import _lazy
from ragtrace.judges._base import (
    ALL_CAPABILITIES,
    GEvalRating,
    Judge,
    JudgeCapabilityError,
    JudgeError,
    JudgeReply,
    Question,
    Rating,
    Verdict,
)
from ragtrace.judges._partial import BaseJudge

if TYPE_CHECKING:
    from ragtrace.judges._default import default_judge
    from ragtrace.judges.offline import OfflineJudge
    from ragtrace.judges.openai import OpenAIJudge
    from ragtrace.judges.tiered import TieredJudge

# Imported on first use: `import ragtrace` runs this package, and an app should not pay for the
# openai client or the offline model's tokenizer/segmenter unless a judge is built.
_LAZY = {
    "OfflineJudge": "ragtrace.judges.offline",
    "OpenAIJudge": "ragtrace.judges.openai",
    "TieredJudge": "ragtrace.judges.tiered",
    "default_judge": "ragtrace.judges._default",
}


__getattr__, __dir__ = _lazy.lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "ALL_CAPABILITIES",
    "BaseJudge",
    "GEvalRating",
    "Judge",
    "JudgeCapabilityError",
    "JudgeError",
    "JudgeReply",
    "OfflineJudge",
    "OpenAIJudge",
    "Question",
    "Rating",
    "TieredJudge",
    "Verdict",
    "default_judge",
]
