"""Public test doubles for apps' own tests (and ours).

- ``FakeJudge``: a scripted judge with a call log and costs (``_fake_judge.py``; scripting is described there).
- ``capture()``: an in-memory ragtrace set-up; ``Captured`` is what it yields (``_capture.py``).
- ``StubOpenAIServer``/``StubReply``: a real OpenAI-compatible HTTP server on 127.0.0.1 for judge tests.

Each lives in its own private module; this ``__init__`` is the curated surface and ``__all__`` is tested
against what the package really exposes.
"""

from __future__ import annotations

from ragtrace.testing._capture import Captured, capture
from ragtrace.testing._fake_judge import DEFAULT_CHAT_COST, DEFAULT_EMBED_COST, FakeCall, FakeJudge
from ragtrace.testing._stub_openai import StubOpenAIServer, StubReply

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
