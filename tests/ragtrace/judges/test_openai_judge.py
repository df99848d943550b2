"""OpenAIJudge steps over real HTTP to the stub server: every step, every response format, bad replies."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from ragtrace import ConfigurationError
from ragtrace.judges import Judge, JudgeError, Question, Verdict
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.testing._stub_openai import StubOpenAIServer, StubReply
from tests.ragtrace.judges.conftest import MakeJudge

SUPER_BOWL = (
    "The First AFL-NFL World Championship Game, later known as Super Bowl I, was played on January 15, 1967, "
    "at the Los Angeles Memorial Coliseum."
)


def _formats(stub: StubOpenAIServer) -> list[str | None]:
    return [(r.body.get("response_format") or {}).get("type") for r in stub.chat_requests]


async def test_every_step_parses_with_one_call_each(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge(model="judge-model")
    assert isinstance(judge, Judge)
    assert judge.name == "openai:judge-model"

    claims = await judge.extract_claims("The first Super Bowl was held on January 15, 1967. It was held in Florida.")
    assert claims.value == ["The first Super Bowl was held on January 15, 1967.", "It was held in Florida."]
    verdicts = await judge.verify(["Super Bowl I was played on January 15, 1967.", "Paris is in Spain."], [SUPER_BOWL])
    assert verdicts.value == [[Verdict.SUPPORTED], [Verdict.NEITHER]]
    correct = await judge.classify_claims(
        ["Leonardo da Vinci painted the Mona Lisa.", "Rome is large."], "Da Vinci painted the Mona Lisa."
    )
    assert correct.value == [True, False]
    relevant = await judge.rate_statements(
        "What is the capital of Brazil?", ["The capital of Brazil is Brasilia.", "Dogs bark."]
    )
    assert relevant.value == [True, False]
    questions = await judge.generate_questions("Brasilia is the capital of Brazil.", 3)
    assert len(questions.value) == 3 and all(isinstance(q, Question) and not q.noncommittal for q in questions.value)
    assert (await judge.detect_noncommittal("I don't know.")).value is True
    assert (await judge.detect_noncommittal("Brasilia.")).value is False
    vectors = await judge.embed(["capital of Brazil", "Brasilia", "capital of Brazil"])
    assert len(vectors.value) == 3 and vectors.value[0] == vectors.value[2] != vectors.value[1]
    ratings = await judge.rate_chunks("When was Super Bowl I played?", [SUPER_BOWL, "Cats sleep a lot."])
    assert ratings.value[0] > ratings.value[1] == 0.0
    rating = await judge.rate_answer("When was Super Bowl I?", "I don't know.")
    assert rating.value.value == 0.0 and rating.value.explanation
    steps = await judge.geval_steps("factual accuracy")
    assert len(steps.value) >= 1
    geval = await judge.geval_score("accuracy", steps.value, {"input": "q", "actual_output": "a"}, (1, 5))
    assert 1.0 <= geval.value.score <= 5.0

    # One HTTP call per step (11 chat steps, 1 embeddings), all in JSON-schema mode at temperature 0.
    assert len(stub.chat_requests) == 11
    assert len(stub.embedding_requests) == 1
    assert set(_formats(stub)) == {"json_schema"}
    assert all(r.body["temperature"] == 0 for r in stub.chat_requests)
    assert [r.step for r in stub.chat_requests][:2] == ["extract_claims", "verify"]
    for reply in (claims, verdicts, correct, relevant, questions, ratings, rating, steps, geval):
        assert reply.cost.chat_calls == 1 and reply.cost.embedding_calls == 0
    assert vectors.cost.embedding_calls == 1 and vectors.cost.chat_calls == 0


async def test_verify_is_one_call_for_all_claims_and_chunks(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge()
    claims = [f"Fact number {i} concerns topic{i}." for i in range(20)]
    chunks = [f"Topic{i} is described here in chunk {i}." for i in range(200)]
    reply = await judge.verify(claims, chunks)
    assert len(reply.value) == 20 and all(len(row) == 200 for row in reply.value)
    assert len(stub.chat_requests) == 1
    rated = await judge.rate_chunks("topic3", chunks)
    assert len(rated.value) == 200 and len(stub.chat_requests) == 2


async def test_long_chunk_and_non_english_text(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge()
    long_chunk = " ".join(["Wasser kocht bei hundert Grad."] * 2500)  # 12,500 words
    claims = await judge.extract_claims("Wasser kocht bei hundert Grad. 水は百度で沸騰する。")
    assert claims.value[0] == "Wasser kocht bei hundert Grad."
    verdicts = await judge.verify(claims.value[:1], [long_chunk])
    assert verdicts.value == [[Verdict.SUPPORTED]]
    assert stub.chat_requests[-1].prompt_tokens > 10_000


async def test_empty_inputs_make_no_call(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge()
    assert (await judge.extract_claims("   ")).value == []
    assert (await judge.verify([], ["chunk"])).value == []
    assert (await judge.verify(["claim"], [])).value == [[]]
    assert (await judge.classify_claims([], "ref")).value == []
    assert (await judge.rate_statements("q", [])).value == []
    assert (await judge.rate_chunks("q", [])).value == []
    assert (await judge.embed([])).value == []
    assert stub.requests == []


async def test_noncommittal_answer_has_no_claims(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge()
    reply = await judge.extract_claims("I don't know.", question="Who painted the Mona Lisa?")
    assert reply.value == []
    assert reply.cost.chat_calls == 1
    assert "Question: Who painted the Mona Lisa?" in stub.chat_requests[0].body["messages"][1]["content"]


@pytest.mark.parametrize(
    "answer",
    [
        "She was born in 1959.",
        "Henri Leconte won more Grand Slam titles.",  # the question says more than whom
        "The Mount Panorama Circuit track is longer than 7 km.",
        "The painting is currently displayed in Paris.",  # an adverb between the verbs: one predicate
        "The conviction has been overturned.",
        "Ted Tetzlaff was a noted film actor.",  # "noted" after an article is an adjective
        "Children's National is a top-ranked hospital.",
    ],
)
async def test_a_one_fact_sentence_is_its_own_claim_without_a_call(
    stub: StubOpenAIServer, make_judge: MakeJudge, answer: str
) -> None:
    # Asking a model to split what is already one atomic claim buys nothing; joined to its question
    # (as extract="sentences" joins every sentence) it keeps the question's meaning.
    reply = await make_judge(extract="llm").extract_claims(answer, question="Who won more titles?")
    assert reply.value == [f"Who won more titles? {answer}"]
    assert reply.cost.chat_calls == 0
    assert stub.requests == []


@pytest.mark.parametrize(
    "answer",
    [
        "She was born in 1959. She wrote code.",  # two sentences
        "She was born in 1959, in Paris.",  # a comma
        "She was born in 1959 and wrote code.",  # a conjunction
        "She wrote the compiler that won the prize.",  # a relative clause
        "She was born in a small town near the coast of a country she later left for good.",  # long
        "Do you mean the year of her birth in the old calendar?",  # a question back, not a claim
        "She was born in 1959\nin Paris",  # two lines
        "She was born in 1959 [1].",  # a bracket
        "She was born -- in Paris.",
        "She was born \u2013 in Paris.",  # an en dash
        "The flag was designed by Theodosia Okoh.",  # a second fact by "by"
        "She won a cross as a gunner.",  # by "as"
        "She was born 10 December 1815 in London.",  # a year and a place
        "He won the starting job at Oklahoma over Tom Brady.",  # two phrases of circumstance
        "Ada was born 1815 and died 1852",  # a sentence without its period is no bare answer
        'She starred in "Janie Jones" and "Signs."',
        "Unclear from the documents.",  # talk about the sources, no negation
        "She AND her sister won.",  # the joins are read in any case
        "The flag designed by Theodosia Okoh was adopted in 1958.",  # a second fact by "by"
        "She was born with a twin sister.",  # by "with"
        "She competed in the 1996 Summer Olympics in Mongolia.",  # a second place or time
        "She won a cross as the gunner of a soldier born in 1889.",  # two predicates
        "Allkpop is a blog based in New Jersey.",
        "She never won a medal.",  # a negation: the model tells a negative fact from a refusal
        "I have no idea.",  # refusals: the model drops them, taken whole they read as hallucinations
        "The provided context does not specify her birth year.",
        "I couldn't find this in the provided documents.",
    ],
)
async def test_an_answer_that_may_hold_several_facts_is_split_by_the_model(
    stub: StubOpenAIServer, make_judge: MakeJudge, answer: str
) -> None:
    reply = await make_judge(extract="llm").extract_claims(answer, question="When was she born?")
    assert reply.cost.chat_calls == 1
    assert [r.step for r in stub.chat_requests] == ["extract_claims"]
    # The stub's split, not the answer joined to the question.
    assert reply.value and not any(claim.startswith("When was she born?") for claim in reply.value)


@pytest.mark.parametrize(
    "answer", ["Unknown", "No idea", "Not stated", "Not sure", "Maybe", "Nobody knows.", "Dunno", "N/A", "1959?"]
)
async def test_a_short_refusal_is_no_bare_answer(stub: StubOpenAIServer, make_judge: MakeJudge, answer: str) -> None:
    # "No idea" is not the answer to "When was she born?": the model drops it, the judge does not verify it.
    reply = await make_judge(extract="llm").extract_claims(answer, question="When was she born?")
    assert reply.cost.chat_calls == 1
    assert not any(claim.startswith("When was she born?") for claim in reply.value)


async def test_a_bare_no_still_answers_a_yes_no_question(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    reply = await make_judge(extract="llm").extract_claims("No", question="Was she born in 1959?")
    assert reply.value == ["Was she born in 1959? No"]
    assert stub.requests == []


@pytest.mark.parametrize(
    "question",
    [
        "Tell me when she was born.",  # a request: no question to join an answer to
        "In what year, after the long and much reported dispute over the records of her birth, " * 4 + "was she born?",
    ],
)
async def test_one_fact_joins_only_a_question_whose_claim_the_wire_keeps_whole(
    stub: StubOpenAIServer, make_judge: MakeJudge, question: str
) -> None:
    reply = await make_judge(extract="llm").extract_claims("She was born in 1959.", question=question)
    assert reply.cost.chat_calls == 1


async def test_without_a_question_a_sentence_is_split_by_the_model(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    reply = await make_judge(extract="llm").extract_claims("She was born in 1959.")
    assert reply.cost.chat_calls == 1


async def test_json_schema_rejected_falls_back_to_json_mode_once(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.mode = "json_object"
    judge = make_judge()
    first = await judge.extract_claims("Brasilia is the capital of Brazil.")
    assert first.value == ["Brasilia is the capital of Brazil."]
    assert first.cost.chat_calls == 2  # the rejected call is counted too
    assert judge.response_mode == "json_object"
    await judge.rate_chunks("capital of Brazil", ["Brasilia is the capital."])
    # Rejected schema, then JSON mode; the second step goes straight to JSON mode.
    assert _formats(stub) == ["json_schema", "json_object", "json_object"]
    assert [r.status for r in stub.chat_requests] == [400, 200, 200]


async def test_plain_text_endpoint_with_prose_replies(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.mode = "text"
    stub.reply_style = "prose"
    judge = make_judge()
    reply = await judge.verify(["Super Bowl I was played on January 15, 1967."], [SUPER_BOWL])
    assert reply.value == [[Verdict.SUPPORTED]]
    assert judge.response_mode == "text"
    assert _formats(stub) == ["json_schema", "json_object", None]


async def test_prose_wrapped_json_is_read(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.reply_style = "prose"
    judge = make_judge()
    reply = await judge.rate_chunks("When was Super Bowl I played?", [SUPER_BOWL])
    assert reply.value[0] > 0
    assert len(stub.chat_requests) == 1


async def test_forced_mode_does_not_downgrade(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.mode = "json_object"
    judge = make_judge(response_mode="json_schema", max_retries=0)
    with pytest.raises(JudgeError) as caught:
        await judge.detect_noncommittal("maybe")
    assert caught.value.error_type == "http_4xx"
    assert len(stub.chat_requests) == 1


async def test_malformed_json_is_retried_then_unparseable(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.reply_style = "malformed"
    judge = make_judge(parse_retries=2)
    with pytest.raises(JudgeError) as caught:
        await judge.extract_claims("Brasilia is the capital of Brazil.")
    assert caught.value.error_type == "unparseable_reply"
    assert "no JSON" in str(caught.value)
    assert caught.value.cost.chat_calls == 3
    assert len(stub.chat_requests) == 3
    prompt, completion = stub.usage()
    assert caught.value.cost.prompt_tokens == prompt and caught.value.cost.completion_tokens == completion


async def test_malformed_then_good_reply_recovers(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(content='{"claims": ["unterminated'))
    judge = make_judge()
    reply = await judge.extract_claims("Brasilia is the capital of Brazil.")
    assert reply.value == ["Brasilia is the capital of Brazil."]
    assert reply.cost.chat_calls == 2


def _responder(step_replies: Mapping[str, Any]) -> Callable[[str, Mapping[str, Any]], Any]:
    return lambda step, _body: step_replies.get(step)


async def test_items_out_of_order_are_aligned(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.responder = _responder(
        {
            "verify": {
                "results": [
                    {"claim": 2, "supported_by": [], "contradicted_by": [1]},
                    {"claim": 1, "supported_by": [1], "contradicted_by": []},
                ]
            },
            "rate_chunks": {"ratings": [{"chunk": "2", "relevance": "0.25"}, {"chunk": 1, "relevance": 1}]},
        }
    )
    judge = make_judge()
    reply = await judge.verify(["a", "b"], ["chunk"])
    assert reply.value == [[Verdict.SUPPORTED], [Verdict.CONTRADICTED]]
    ratings = await judge.rate_chunks("q", ["one", "two"])
    assert ratings.value == [1.0, 0.25]


@pytest.mark.parametrize(
    ("results", "fault"),
    [
        # The measured failure: a one-chunk record, the example's chunk 2 cited.
        (
            [{"claim": 1, "supported_by": [2], "contradicted_by": []}],
            "supported_by names 2, but the request has 1 to 1",
        ),
        ([{"claim": 1, "supported_by": [], "contradicted_by": [9]}], "contradicted_by names 9"),
        ([{"claim": 1, "supported_by": [1], "contradicted_by": []}, {"claim": 7, "supported_by": [1]}], "claim 7"),
        ([{"claim": 1, "supported_by": [1], "contradicted_by": []}] * 2, "gives claim 1 twice"),
        ([], "lacks claim 1 of 1"),
    ],
)
async def test_a_reply_naming_items_the_request_lacks_is_an_invalid_reply(
    stub: StubOpenAIServer, make_judge: MakeJudge, results: list[dict[str, Any]], fault: str
) -> None:
    stub.responder = _responder({"verify": {"results": results}})
    judge = make_judge()
    with pytest.raises(JudgeError) as caught:
        await judge.verify(["a"], ["chunk"])
    assert caught.value.error_type == "invalid_reply"
    assert fault in str(caught.value)
    assert caught.value.cost.chat_calls == 1  # not asked again: at temperature 0 the reply would repeat


async def test_an_invalid_reply_is_an_error_score_never_a_zero(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    from ragtrace import RagRecord
    from ragtrace.metrics import Faithfulness

    stub.responder = _responder({"verify": {"results": [{"claim": 1, "supported_by": [2], "contradicted_by": []}]}})
    score = await Faithfulness().score(RagRecord.of("q", ["the only chunk"], "A claim."), make_judge())
    assert score.value is None
    assert score.status == "error"
    assert score.error_type == "invalid_reply"


async def test_missing_items_are_an_error_never_a_guess(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.responder = _responder({"classify_claims": {"results": [{"claim": 1, "correct": True}]}})
    judge = make_judge()
    with pytest.raises(JudgeError) as caught:
        await judge.classify_claims(["a", "b", "c"], "reference")
    assert caught.value.error_type == "invalid_reply"
    assert "lacks claim 2, 3 of 3" in str(caught.value)
    assert len(stub.chat_requests) == 1


async def test_rating_out_of_range_is_an_error(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.responder = _responder({"rate_answer": {"explanation": "great", "score": 8}})
    judge = make_judge(parse_retries=0)
    with pytest.raises(JudgeError) as caught:
        await judge.rate_answer("q", "a")
    assert caught.value.error_type == "unparseable_reply"
    assert "outside [0.0, 1.0]" in str(caught.value)


async def test_token_accounting_is_summed_from_usage(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge()
    claims = await judge.extract_claims("Brasilia is the capital of Brazil. It was founded in 1960.")
    verdicts = await judge.verify(claims.value, ["Brasilia became the capital in 1960."])
    vectors = await judge.embed(["capital of Brazil", "Brasilia"])
    total = claims.cost + verdicts.cost + vectors.cost
    prompt, completion = stub.usage()
    assert (total.prompt_tokens, total.completion_tokens) == (prompt, completion)
    assert total.prompt_tokens > 0 and total.completion_tokens > 0
    assert (total.chat_calls, total.embedding_calls) == (2, 1)
    assert claims.cost.seconds > 0


async def test_geval_weights_score_by_logprobs(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.responder = _responder({"geval_score": {"score": 3, "explanation": "fine"}})
    judge = make_judge()
    reply = await judge.geval_score("accuracy", ["check"], {"actual_output": "x"}, (1, 5))
    # The stub puts 0.7 on the written digit, 0.2 on the next, 0.1 on the previous.
    assert reply.value.weighted is True
    assert reply.value.score == pytest.approx(3 * 0.7 + 4 * 0.2 + 2 * 0.1)
    assert reply.value.explanation == "fine"
    request = stub.chat_requests[-1].body
    assert request["logprobs"] is True and request["top_logprobs"] >= 1


async def test_geval_without_logprobs_uses_the_integer(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.responder = _responder({"geval_score": {"score": 4, "explanation": "good"}})
    stub.logprobs = False
    judge = make_judge()
    reply = await judge.geval_score("accuracy", ["check"], {"actual_output": "x"}, (1, 5))
    assert (reply.value.score, reply.value.weighted) == (4.0, False)


async def test_endpoint_rejecting_logprobs_is_asked_without(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(status=400, body={"error": {"message": "logprobs are not supported", "type": "invalid"}}))
    stub.responder = _responder({"geval_score": {"score": 2, "explanation": "meh"}})
    judge = make_judge()
    reply = await judge.geval_score("accuracy", ["check"], {"actual_output": "x"}, (1, 5))
    assert (reply.value.score, reply.value.weighted) == (2.0, False)
    assert [("logprobs" in r.body) for r in stub.chat_requests] == [True, False]
    await judge.geval_score("accuracy", ["check"], {"actual_output": "x"}, (1, 5))
    assert "logprobs" not in stub.chat_requests[-1].body


async def test_embeddings_are_put_in_input_order(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    reply_body: dict[str, Any] = {
        "object": "list",
        "data": [
            {"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
            {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]},
        ],
        "model": "m",
        "usage": {"prompt_tokens": 4, "total_tokens": 4},
    }
    stub.script(StubReply(body=reply_body))
    judge = make_judge()
    reply = await judge.embed(["first", "second"])
    assert reply.value == [[1.0, 0.0], [0.0, 1.0]]
    assert reply.cost.prompt_tokens == 4
    short = StubReply(body={**reply_body, "data": reply_body["data"][:1]})
    stub.script(short, short)
    with pytest.raises(JudgeError) as caught:
        await judge.embed(["first", "second"])
    assert caught.value.error_type == "unparseable_reply"
    assert caught.value.cost.embedding_calls == 2  # asked again once (parse_retries=1)


async def test_questions_need_their_noncommittal_flag(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.responder = _responder({"generate_questions": {"questions": ["What is it?"]}})
    judge = make_judge(parse_retries=0)
    with pytest.raises(JudgeError) as caught:
        await judge.generate_questions("It is a cat.", 3)
    assert caught.value.error_type == "unparseable_reply"


async def test_noncommittal_answer_is_flagged(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge()
    reply = await judge.generate_questions("I don't know.", 2)
    assert [q.noncommittal for q in reply.value] == [True, True]
    sent = json.dumps(stub.chat_requests[0].body["messages"])
    assert "Number of questions: 2" in sent


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.0}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"model": "  "}, "RAGTRACE_JUDGE_MODEL"),
        ({"embedding_model": ""}, "RAGTRACE_JUDGE_EMBEDDING_MODEL"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"response_mode": "xml"}, "response_mode"),
        ({"top_logprobs": 50}, "top_logprobs"),
        ({"max_retry_after": -1.0}, "max_retry_after"),  # would fail every Retry-After, even 0 s
        ({"max_retry_after": float("nan")}, "max_retry_after"),
        ({"retry_base_delay": True}, "retry_base_delay"),
    ],
)
def test_wrong_settings_raise_configuration_error(kwargs: dict[str, Any], fix: str) -> None:
    with pytest.raises(ConfigurationError, match=fix):
        OpenAIJudge(base_url="http://127.0.0.1:9/v1", **kwargs)


def test_missing_key_and_endpoint_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "RAGTRACE_JUDGE_API_KEY", "RAGTRACE_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIJudge()


def test_environment_variables_configure_and_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAGTRACE_JUDGE_MODEL", "llama3")
    monkeypatch.setenv("RAGTRACE_JUDGE_TIMEOUT", "7.5")
    monkeypatch.setenv("RAGTRACE_JUDGE_MAX_CONCURRENCY", "4")
    judge = OpenAIJudge()
    assert (judge.name, judge.timeout, judge.max_concurrency) == ("openai:llama3", 7.5, 4)
    assert OpenAIJudge(model="override", timeout=1.0).name == "openai:override"
    monkeypatch.setenv("RAGTRACE_JUDGE_TIMEOUT", "soon")
    assert OpenAIJudge().timeout == OpenAIJudge(timeout=None).timeout == 180.0  # the default, with a warning
