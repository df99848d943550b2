"""Fixtures of the OpenAI judge tests: a real stub server on 127.0.0.1 and judges pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from ragtrace.judges.openai import OpenAIJudge
from ragtrace.testing._stub_openai import StubOpenAIServer

MakeJudge = Callable[..., OpenAIJudge]


@pytest.fixture
def stub() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer() as server:
        yield server


@pytest.fixture
async def make_judge(stub: StubOpenAIServer) -> AsyncIterator[MakeJudge]:
    """Build judges on the stub with fast retries; every judge built is closed after the test."""
    judges: list[OpenAIJudge] = []

    def make(**kwargs: Any) -> OpenAIJudge:
        kwargs.setdefault("base_url", stub.base_url)
        kwargs.setdefault("retry_base_delay", 0.01)
        kwargs.setdefault("timeout", 5.0)
        kwargs.setdefault("verify", "batched")
        judge = OpenAIJudge(**kwargs)
        judges.append(judge)
        return judge

    yield make
    for judge in judges:
        await judge.aclose()
