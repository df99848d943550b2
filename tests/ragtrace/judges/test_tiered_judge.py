"""The tiered judge: the offline tier scores every record, the LLM tier (real HTTP to the stub server)
re-scores the doubtful ones and a fixed audit share, and every score says which tier produced it."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ragtrace import ConfigurationError, RagRecord, semconv, wire
from ragtrace.judges import JudgeReply, TieredJudge, Verdict
from ragtrace.judges._default import default_judge
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.judges.tiered import DEFAULT_MARGIN, audit_draw, needs_llm, rescore
from ragtrace.metrics import build_suite
from ragtrace.testing import FakeJudge
from ragtrace.testing._stub_openai import StubOpenAIServer

OFFLINE = "offline:fake"


class SupportingFake(FakeJudge):
    """An offline tier: claims are the answer's sentences, support probabilities come from a table."""

    def __init__(self, probabilities: Mapping[str, float], **steps: Any) -> None:
        steps.setdefault(
            "extract_claims", lambda text, question=None: [s.strip() + "." for s in text.split(".") if s.strip()]
        )
        steps.setdefault(
            "verify",
            lambda claims, chunks: [
                ["supported" if probabilities[c] >= 0.5 else "contradicted"] * len(chunks) for c in claims
            ],
        )
        steps.setdefault("rate_chunks", lambda query, chunks: [0.8] * len(chunks))
        super().__init__(**steps)
        self.name = OFFLINE
        self.support_threshold = 0.5  # its verdicts cut its probabilities at 0.5, whatever the real judge's is
        self.probabilities = probabilities
        self.support_calls = 0

    async def support(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[float]]]:
        self.support_calls += 1
        return JudgeReply([[self.probabilities[c]] * len(chunks) for c in claims])


SURE_YES = "Brasilia is the capital of Brazil."
SURE_NO = "Lima is the capital of Brazil."
DOUBTFUL = "Brasilia became the capital in 1960."
TABLE = {SURE_YES: 0.95, SURE_NO: 0.05, DOUBTFUL: 0.52}  # DOUBTFUL within the default margin of 0.5
CHUNK = "Brasilia is the capital of Brazil. It replaced Rio de Janeiro as the capital in 1960."


@pytest.fixture
async def llm(stub: StubOpenAIServer) -> Any:
    judge = OpenAIJudge(model="small", base_url=stub.base_url, retry_base_delay=0.01, timeout=5.0)
    yield judge
    await judge.aclose()


def tiered(llm: OpenAIJudge, **kwargs: Any) -> TieredJudge:
    kwargs.setdefault("audit_share", 0.0)
    return TieredJudge(SupportingFake(TABLE), llm, threshold=0.5, **kwargs)


async def test_a_sure_record_never_reaches_the_llm(stub: StubOpenAIServer, llm: OpenAIJudge) -> None:
    judge = tiered(llm)
    reply = await judge.verify([SURE_YES, SURE_NO], [CHUNK])
    assert reply.value == [[Verdict.SUPPORTED], [Verdict.CONTRADICTED]]  # the offline tier's own verdicts
    assert reply.support == [[TABLE[SURE_YES]], [TABLE[SURE_NO]]]  # and its probabilities
    assert reply.judge == OFFLINE
    assert stub.chat_requests == []
    assert (judge.records, judge.llm_records) == (1, 0)


async def test_a_doubtful_claim_sends_the_record_to_the_llm(stub: StubOpenAIServer, llm: OpenAIJudge) -> None:
    judge = tiered(llm)
    reply = await judge.verify([SURE_YES, DOUBTFUL], [CHUNK])
    assert reply.judge == "openai:small"
    assert [r.step for r in stub.chat_requests] == ["verify_claim", "verify_claim"]
    assert reply.cost.chat_calls == 2
    # verify's support is on the offline scale too: the LLM's P(yes) in the band, beside its verdicts.
    assert reply.support is not None
    low, high = 0.5 - DEFAULT_MARGIN, 0.5 + DEFAULT_MARGIN
    for (p,), (v,) in zip(reply.support, reply.value, strict=True):
        assert low <= p <= high and (p >= 0.5) is (v is Verdict.SUPPORTED)
    support = await judge.support([DOUBTFUL], [CHUNK])
    # The LLM's P(yes) re-scored within the doubt band (0.5 +- the margin), on the side of its verdict.
    assert support.judge == "openai:small" and 0.5 <= support.value[0][0] <= high
    assert rescore(0.0, 0.5, 0.15) == pytest.approx(0.35) and rescore(1.0, 0.5, 0.15) == pytest.approx(0.65)
    assert (judge.records, judge.llm_records) == (2, 2)


async def test_the_audit_share_is_fixed_per_record(stub: StubOpenAIServer, llm: OpenAIJudge) -> None:
    assert audit_draw("a record") == audit_draw("a record")
    draws = [audit_draw(f"record {i}") for i in range(2000)]
    assert 0.04 < sum(d < 0.05 for d in draws) / len(draws) < 0.06
    assert needs_llm([0.99], "k", audit_share=1.0) and not needs_llm([0.99], "k", audit_share=0.0)
    everything = tiered(llm, audit_share=1.0)
    reply = await everything.verify([SURE_YES], [CHUNK])
    again = await everything.verify([SURE_YES], [CHUNK])
    # Audited both times (the same record, the same draw): the LLM was asked, and as it agreed with the
    # offline tier, the offline reading keeps its score and says so.
    assert [r.step for r in stub.chat_requests] == ["verify_claim", "verify_claim"]
    assert reply.judge == again.judge == OFFLINE
    assert reply.support == [[TABLE[SURE_YES]]] and reply.cost.chat_calls >= 2
    assert (everything.records, everything.llm_records) == (2, 2)


async def test_an_audit_that_finds_the_offline_tier_wrong_gives_the_llms_reading() -> None:
    # The offline tier is sure SURE_NO is unsupported (0.05); the LLM, audited, says it is supported.
    llm = FakeJudge(name="openai:audit", verify={SURE_NO: ["supported"]}, support={SURE_NO: [0.9]})
    judge = TieredJudge(SupportingFake(TABLE), llm, threshold=0.5, audit_share=1.0)
    reply = await judge.verify([SURE_NO], [CHUNK])
    assert reply.judge == "openai:audit" and reply.value == [["supported"]]
    assert reply.support is not None and 0.5 <= reply.support[0][0] <= 0.5 + judge.margin


async def test_an_llm_failure_leaves_the_offline_verdicts_and_says_so(
    stub: StubOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    broken = OpenAIJudge(base_url=stub.base_url, max_retries=0, retry_base_delay=0.0)
    stub.responder = lambda step, _body: "maybe"
    judge = TieredJudge(SupportingFake(TABLE), broken, threshold=0.5, audit_share=0.0)
    try:
        with caplog.at_level(logging.WARNING, logger="ragtrace"):
            reply = await judge.verify([DOUBTFUL], [CHUNK])
    finally:
        await judge.aclose()
    assert reply.judge == OFFLINE
    assert reply.value == [[Verdict.SUPPORTED]]
    # What the failed LLM attempt spent (2) is counted, beside the offline tier's verify (1).
    assert reply.cost.chat_calls == 3
    assert judge.llm_failures == 1
    assert any("LLM tier" in r.getMessage() and "unparseable_reply" in r.getMessage() for r in caplog.records)


async def test_every_score_names_its_tier_on_the_wire(stub: StubOpenAIServer, llm: OpenAIJudge) -> None:
    judge = tiered(llm)
    suite = build_suite("faithfulness,hallucination,context_relevance")
    sure = await suite.score(RagRecord.of("Capital of Brazil?", [CHUNK], SURE_YES), judge)
    doubtful = await suite.score(RagRecord.of("Capital of Brazil?", [CHUNK], f"{SURE_YES} {DOUBTFUL}"), judge)
    for result, verdict_tier in ((sure, OFFLINE), (doubtful, "openai:small")):
        encoded = wire.encode(list(result.scores.values()), result.cost, result.judge)
        assert encoded.attributes[semconv.eval_judge("faithfulness")] == verdict_tier
        assert encoded.attributes[semconv.eval_judge("hallucination")] == verdict_tier
        assert encoded.attributes[semconv.eval_judge("context_relevance")] == OFFLINE
        assert encoded.attributes[semconv.EVAL_JUDGE] == "tiered:offline:fake+openai:small"
    assert sure.scores["faithfulness"].value == TABLE[SURE_YES]  # the offline tier's support probability
    assert sure.scores["faithfulness"].label == "faithful"
    # The LLM tier saw one question per claim of the doubtful record, nothing else.
    assert [r.step for r in stub.chat_requests] == ["verify_claim", "verify_claim"]
    assert semconv.eval_judge("faithfulness") == "ragtrace.eval.faithfulness.judge"


async def test_llm_only_steps_are_offered_only_when_asked(stub: StubOpenAIServer, llm: OpenAIJudge) -> None:
    record = RagRecord.of("Capital of Brazil?", [CHUNK], SURE_YES)
    suite = build_suite("answer_relevancy_embedding")
    lean = await suite.score(record, tiered(llm))
    assert lean.scores["answer_relevancy_embedding"].reason == "judge_lacks_capability"
    full = tiered(llm, llm_only_steps=True)
    assert "generate_questions" in full.capabilities
    questions = await full.generate_questions(SURE_YES, 2)
    assert questions.judge == "openai:small" and len(questions.value) == 2


def test_wrong_settings_raise_configuration_error(llm: OpenAIJudge) -> None:
    with pytest.raises(ConfigurationError, match="has no support"):
        TieredJudge(FakeJudge(), llm)
    with pytest.raises(ConfigurationError, match="audit_share=2"):
        TieredJudge(SupportingFake(TABLE), llm, audit_share=2)


def test_ragtrace_judge_tiered_builds_both_tiers(monkeypatch: pytest.MonkeyPatch, stub: StubOpenAIServer) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE", "tiered")
    monkeypatch.setenv("RAGTRACE_JUDGE_BASE_URL", stub.base_url)
    monkeypatch.setenv("RAGTRACE_JUDGE_MODEL", "small")
    judge = default_judge()
    assert isinstance(judge, TieredJudge)
    assert judge.name.startswith("tiered:offline:") and judge.name.endswith("+openai:small")
    assert isinstance(default_judge("tiered"), TieredJudge)


def test_the_collector_scores_with_the_tiered_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub: StubOpenAIServer
) -> None:
    """End to end in the collector's pipeline: RAGTRACE_JUDGE=tiered picks the judge its server-side
    scoring uses; the offline tier is the fake (the real one is measured in bench/)."""
    import ragtrace.judges.offline as offline_module
    from tests.collector._spans import SpanFactory, otlp_bytes, start_collector

    monkeypatch.setattr(offline_module, "OfflineJudge", lambda: SupportingFake(TABLE))
    for name, value in {
        "RAGTRACE_JUDGE": "tiered",
        "RAGTRACE_JUDGE_BASE_URL": stub.base_url,
        "RAGTRACE_JUDGE_MODEL": "small",
        "RAGTRACE_SAMPLE_RATE": "1.0",
        "RAGTRACE_METRICS": "faithfulness,hallucination,context_relevance",
    }.items():
        monkeypatch.setenv(name, value)
    factory = SpanFactory(service="shop")
    answers = [SURE_YES, SURE_NO, f"{SURE_YES} {DOUBTFUL}", SURE_YES]
    for answer in answers:
        factory.rag(query="What is the capital of Brazil?", answer=answer, route="/ask")
    db = tmp_path / "c.db"
    running = start_collector(db, score=True)
    try:
        import urllib.request

        request = urllib.request.Request(
            f"http://127.0.0.1:{running.http_port}/v1/traces",
            data=otlp_bytes(factory.all()),
            headers={"content-type": "application/x-protobuf"},
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.status == 200
        assert running.scorer is not None and running.scorer.wait_idle(60)
    finally:
        running.stop()
    with sqlite3.connect(db) as conn:
        decisions = [row[0] for row in conn.execute("SELECT decision FROM rag_records")]
        judges = {row[0] for row in conn.execute("SELECT judge FROM rag_records")}
        values = dict(conn.execute("SELECT metric, count(value) FROM scores GROUP BY metric"))
    assert decisions == [semconv.DECISION_EVALUATED] * len(answers)
    assert judges == {"tiered:offline:fake+openai:small"}
    assert values == {"faithfulness": 4, "hallucination": 4, "context_relevance": 4}
    # Only the doubtful record's two claims reached the LLM.
    assert [r.step for r in stub.chat_requests] == ["verify_claim", "verify_claim"]


async def test_a_sure_record_keeps_every_rule_of_the_offline_tier() -> None:
    # The support model reads "9 am" against "10 am" as likely support; the offline judge's number rule
    # says contradicted, and so must the tiered judge when it does not ask the LLM.
    from ragtrace.judges.offline import OfflineJudge

    never = FakeJudge(name="openai:never", fail={"verify": "must_not_be_called"})
    judge = TieredJudge(OfflineJudge(), never, audit_share=0.0)
    claims = ["The shop opens at 9 am.", "The contract was signed in March."]
    chunks = ["The shop opens at 10 am every day. The contract was signed in June."]
    alone = await OfflineJudge().verify(claims, chunks)
    reply = await judge.verify(claims, chunks)
    assert [row[0] for row in alone.value] == [Verdict.CONTRADICTED, Verdict.CONTRADICTED]
    # Whether it routed a claim to the LLM (which fails here) or not, the offline tier's verdicts stand.
    assert reply.value == alone.value and reply.support == alone.support
