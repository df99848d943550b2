"""Suite: shared work (one call per step per record), call counts of the production suite, costs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from ragtrace import ConfigurationError, RagRecord, Score
from ragtrace.judges import Judge, Verdict
from ragtrace.metrics import (
    METRIC_NAMES,
    PRODUCTION_METRICS,
    Direction,
    Faithfulness,
    Hallucination,
    Suite,
    build_suite,
    metric_by_name,
)
from ragtrace.testing import DEFAULT_CHAT_COST, DEFAULT_EMBED_COST, FakeJudge


def scripted(n_claims: int, n_chunks: int) -> FakeJudge:
    """A judge that answers every step for any number of claims and chunks."""
    return FakeJudge(
        extract_claims=lambda text, question=None: [f"{text[:10]} claim {i}" for i in range(n_claims)],
        verify=lambda claims, chunks: [
            [Verdict.SUPPORTED if (i + k) % 3 == 0 else Verdict.NEITHER for k in range(len(chunks))]
            for i in range(len(claims))
        ],
        classify_claims=lambda claims, reference: [i % 2 == 0 for i in range(len(claims))],
        rate_statements=lambda query, statements: [True] * len(statements),
        generate_questions=lambda answer, n: [f"question {i}" for i in range(n)],
        embed=lambda texts: [[1.0, float(i)] for i in range(len(texts))],
        rate_chunks=lambda query, chunks: [0.5] * len(chunks),
        rate_answer=0.9,
        detect_noncommittal=False,
    )


def record(n_chunks: int, reference: str | None = None) -> RagRecord:
    return RagRecord.of("the query", [f"chunk {k}" for k in range(n_chunks)], "the answer", reference=reference)


@pytest.mark.parametrize(("n_claims", "n_chunks"), [(1, 1), (7, 3), (40, 200)])
async def test_production_suite_costs_at_most_four_chat_and_one_embedding_call(n_claims: int, n_chunks: int) -> None:
    judge = scripted(n_claims, n_chunks)
    result = await build_suite().score(record(n_chunks), judge)
    assert set(result.scores) == set(PRODUCTION_METRICS)
    assert all(s.ok for s in result.scores.values()), result.scores
    assert judge.chat_calls <= 4
    assert judge.embedding_calls <= 1
    assert sorted(c.step for c in judge.calls) == [
        "embed",
        "extract_claims",
        "generate_questions",
        "rate_chunks",
        "verify",
    ]
    # The suite's cost is the unique calls; each score's cost is the steps it used.
    assert (
        result.cost
        == judge.cost
        == DEFAULT_CHAT_COST + DEFAULT_CHAT_COST + DEFAULT_CHAT_COST + DEFAULT_CHAT_COST + DEFAULT_EMBED_COST
    )
    assert result.calls == 5
    assert result.scores["faithfulness"].cost == DEFAULT_CHAT_COST + DEFAULT_CHAT_COST
    assert result.scores["hallucination"].cost == DEFAULT_CHAT_COST + DEFAULT_CHAT_COST
    assert result.scores["answer_relevancy_embedding"].cost == DEFAULT_CHAT_COST + DEFAULT_EMBED_COST
    assert result.scores["context_relevance"].cost == DEFAULT_CHAT_COST
    assert result.judge == "fake"
    faith, hallu = result.value("faithfulness"), result.value("hallucination")
    assert faith is not None and hallu is not None and faith + hallu == pytest.approx(1.0)


async def test_every_metric_with_a_reference_shares_extractions_and_verifications() -> None:
    judge = scripted(5, 4)
    names = [n for n in METRIC_NAMES if n != "geval"]
    result = await build_suite(names).score(record(4, reference="the reference"), judge)
    assert all(s.ok for s in result.scores.values()), {n: s.explanation for n, s in result.scores.items() if not s.ok}
    counts = {step: judge.count(step) for step in {c.step for c in judge.calls}}
    assert counts == {
        "extract_claims": 2,  # the answer once, the reference once
        "verify": 2,  # answer claims x chunks, reference claims x chunks
        "classify_claims": 1,
        "rate_statements": 1,
        "generate_questions": 1,
        "embed": 1,
        "rate_chunks": 1,
        "rate_answer": 1,
    }


async def test_concurrent_callers_await_one_call() -> None:
    release, entered = asyncio.Event(), asyncio.Event()
    started = 0

    async def slow_claims(text: str, question: str | None = None) -> list[str]:
        nonlocal started
        started += 1
        entered.set()
        await release.wait()
        return ["a claim"]

    judge = FakeJudge(extract_claims=slow_claims, verify=[[Verdict.SUPPORTED]])
    task = asyncio.ensure_future(Suite([Faithfulness(), Hallucination()]).score(record(1), judge))
    await entered.wait()
    release.set()
    result = await task
    assert started == 1
    assert judge.count("extract_claims") == 1
    assert result.value("faithfulness") == 1.0 and result.value("hallucination") == 0.0


async def test_a_failing_shared_step_fails_each_dependent_metric_once() -> None:
    judge = scripted(3, 2)
    judge.fail["verify"] = "http_5xx"
    result = await build_suite().score(record(2), judge)
    for name in ("faithfulness", "hallucination"):
        assert (result.scores[name].status, result.scores[name].error_type) == ("error", "http_5xx")
    assert result.scores["context_relevance"].ok
    assert result.scores["answer_relevancy_embedding"].ok
    assert judge.count("verify") == 1
    assert result.cost == judge.cost


async def test_a_raising_user_metric_does_not_sink_the_suite() -> None:
    class Broken:
        name = "broken"
        direction: Direction = "higher"
        needs: frozenset[str] = frozenset()
        capabilities: frozenset[str] = frozenset()

        async def score(self, record: RagRecord, judge: Judge) -> Score:
            raise KeyError("oops")

    result = await Suite([Broken(), metric_by_name("context_relevance")]).score(record(1), scripted(1, 1))
    assert (result.scores["broken"].status, result.scores["broken"].error_type) == ("error", "KeyError")
    assert result.scores["context_relevance"].ok


async def test_a_cancelled_suite_leaves_no_call_running() -> None:
    gate, entered = asyncio.Event(), asyncio.Event()
    finished = False

    async def never(text: str, question: str | None = None) -> list[str]:
        nonlocal finished
        entered.set()
        await gate.wait()
        finished = True
        return []

    judge = FakeJudge(extract_claims=never)
    task = asyncio.ensure_future(Suite([Faithfulness(), Hallucination()]).score(record(1), judge))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not finished


def test_registry_and_suite_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="faithfulness"):
        metric_by_name("faithfulnes")
    with pytest.raises(ConfigurationError, match="bad options"):
        metric_by_name("faithfulness", threshold=0.3)
    with pytest.raises(ConfigurationError, match="twice"):
        build_suite("faithfulness, faithfulness")
    with pytest.raises(ConfigurationError, match="at least one"):
        build_suite("")
    assert build_suite(" hallucination ,context_recall").names == ("hallucination", "context_recall")
    assert metric_by_name("hallucination", threshold=0.2).threshold == 0.2  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="needs options"):
        build_suite("faithfulness,geval")
    geval = metric_by_name("geval", name="fact_check", criteria="facts are right")
    assert geval.name == "fact_check"
    for name in METRIC_NAMES:
        if name != "geval":
            assert metric_by_name(name).name == name


async def test_production_suite_on_a_judge_without_chat_steps_for_questions() -> None:
    # Like the offline judge: no generate_questions, so answer relevancy falls back to embed + detect_noncommittal.
    judge = scripted(2, 3)
    judge.capabilities = frozenset({"extract_claims", "verify", "embed", "detect_noncommittal"})
    result = await build_suite().score(record(3), judge)
    assert result.scores["answer_relevancy_embedding"].details["method"] == "answer_embedding"
    assert (result.scores["context_relevance"].status, result.scores["context_relevance"].reason) == (
        "skipped",
        "judge_lacks_capability",
    )
    assert judge.count("embed") == 1
    assert judge.calls_to("embed")[0].args == (("the query", "the answer"),)
    assert judge.count("rate_chunks") == 0


def test_unknown_names_in_the_metrics_variable_are_left_out_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    from ragtrace.metrics._registry import PRODUCTION_METRICS, configured_suite

    monkeypatch.setenv("RAGTRACE_METRICS", "faithfulness,faithfullness,halucination")
    assert configured_suite().names == ("faithfulness",)
    first, second = warned("RAGTRACE_METRICS")  # each unknown name is named
    assert "RAGTRACE_METRICS='faithfullness' is invalid: unknown metric" in first
    assert "'halucination'" in second and "it is left out" in second
    monkeypatch.setenv("RAGTRACE_METRICS", "nothing_known")
    assert configured_suite().names == tuple(PRODUCTION_METRICS)
    with pytest.raises(ConfigurationError, match="unknown metric"):
        configured_suite(["faithfullness"])  # an argument in code still raises
