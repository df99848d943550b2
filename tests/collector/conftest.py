"""Fixtures of the collector tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def offline_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector scores every record (``RAGTRACE_SAMPLE_RATE=1.0``) with the offline judge and the production
    suite, whatever the environment sets: no key or base URL can send a test's content to an API."""
    monkeypatch.setenv("RAGTRACE_JUDGE", "offline")
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "1.0")
    for name in ("OPENAI_API_KEY", "RAGTRACE_JUDGE_BASE_URL", "RAGTRACE_METRICS"):
        monkeypatch.delenv(name, raising=False)
