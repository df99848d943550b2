"""Public test doubles for apps' own tests (and ours).

- ``FakeJudge``: a scripted judge with a call log and costs (``_fake_judge.py``; scripting is described there).
- ``capture()``: an in-memory ragtrace set-up; ``Captured`` is what it yields (``_capture.py``).
- ``StubOpenAIServer``/``StubReply``: a real OpenAI-compatible HTTP server on 127.0.0.1 for judge tests.

Each lives in its own private module; this ``__init__`` is the curated surface and ``__all__`` is tested
against what the package really exposes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtrace import _lazy
from ragtrace.testing._capture import Captured, capture
from ragtrace.testing._fake_judge import DEFAULT_CHAT_COST, DEFAULT_EMBED_COST, FakeCall, FakeJudge

if TYPE_CHECKING:
    from ragtrace.testing._stub_openai import StubOpenAIServer, StubReply

# Imported on first use: the stub reads the OpenAI judge's prompts, and so loads the openai client (about a
# second), which a test using only FakeJudge or capture() does not need.
_LAZY = {"StubOpenAIServer": "ragtrace.testing._stub_openai", "StubReply": "ragtrace.testing._stub_openai"}

__getattr__, __dir__ = _lazy.lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "DEFAULT_CHAT_COST",
    "DEFAULT_EMBED_COST",
    "Captured",
    "FakeCall",
    "FakeJudge",
    "StubOpenAIServer",
    "StubReply",
    "capture",
]
