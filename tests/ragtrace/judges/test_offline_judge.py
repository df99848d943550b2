"""Behaviour of the offline judge with the real int8 MiniLM model (loaded once per session)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from ragtrace import ConfigurationError
from ragtrace.judges import ALL_CAPABILITIES, Judge, JudgeCapabilityError, Verdict
from ragtrace.judges.offline import OfflineJudge, embed_texts
from ragtrace.judges.offline.embedder import Embedder, Stopped
from ragtrace.judges.offline.grounding import MAX_UNITS_PER_CHUNK
from ragtrace.judges.offline.reader import AnswerReader
from ragtrace.judges.offline.support import SupportModel
from ragtrace.judges.offline.text import claim_focus, content_words, extract_claims, numbers, split_sentences, words
from tests.ragtrace.judges.test_offline_support import EIFFEL as SUPPORT_TESTS_EIFFEL
from tests.ragtrace.judges.test_offline_support import SPANS

from ._threads import at_once

SUPER_BOWL = (
    "The First AFL-NFL World Championship Game, later known as Super Bowl I, was played on January 15, 1967, "
    "at the Los Angeles Memorial Coliseum."
)
BRAZIL = "Brazil is a country in South America. Its capital is Brasilia, which replaced Rio de Janeiro in 1960."
OBEROI = (
    "The Oberoi family is an Indian family that is famous for its involvement in hotels, namely through The "
    "Oberoi Group.The Oberoi Group is a hotel company with its head office in Delhi."
)
EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the company of "
    "Gustave Eiffel and completed in 1889 for the World's Fair. The tower is 330 metres tall."
)
PHOTOSYNTHESIS = (
    "Photosynthesis is the process by which green plants use sunlight, water and carbon dioxide to make "
    "glucose and release oxygen."
)


@pytest.fixture(scope="session")
def judge() -> OfflineJudge:
    """One judge for the session, with its own embedder, loaded once up front."""
    offline = OfflineJudge(embedder=Embedder())
    offline.embedder.load()
    return offline


async def faithfulness(judge: OfflineJudge, answer: str, chunks: Sequence[str], question: str | None = None) -> float:
    claims = (await judge.extract_claims(answer, question=question)).value
    assert claims, f"no claims extracted from {answer!r}"
    verdicts = (await judge.verify(claims, chunks)).value
    return sum(any(v is Verdict.SUPPORTED for v in row) for row in verdicts) / len(claims)


def test_satisfies_the_judge_protocol_and_names_itself(judge: OfflineJudge) -> None:
    assert isinstance(judge, Judge)
    assert judge.name == "offline:minilm-int8"
    assert judge.capabilities < ALL_CAPABILITIES


@pytest.mark.parametrize(
    ("step", "call"),
    [
        ("generate_questions", lambda j: j.generate_questions("Paris is the capital of France.", 3)),
        ("rate_answer", lambda j: j.rate_answer("What is the capital of France?", "Paris.")),
        ("geval", lambda j: j.geval_steps("Is the answer factually correct?")),
        ("geval", lambda j: j.geval_score("correctness", ["check"], {"input": "q"}, (1, 5))),
    ],
)
async def test_steps_it_cannot_serve_raise_capability_error(judge: OfflineJudge, step: str, call: object) -> None:
    assert step not in judge.capabilities
    with pytest.raises(JudgeCapabilityError) as raised:
        await call(judge)  # type: ignore[operator]
    assert raised.value.error_type == "judge_lacks_capability"
    assert raised.value.step == step


def test_glued_paragraphs_are_split_into_sentences() -> None:
    assert split_sentences(OBEROI) == [
        "The Oberoi family is an Indian family that is famous for its involvement in hotels, namely through The "
        "Oberoi Group.",
        "The Oberoi Group is a hotel company with its head office in Delhi.",
    ]


def test_a_word_glued_to_the_previous_sentence_is_not_lost() -> None:
    # HaluEval knowledge glues paragraphs, even after a capital ("El-P.Jaime"); abbreviations stay whole.
    assert words("label head El-P.Jaime Meline, of Hawaii.Aulani in the U.S. today") == [
        "label",
        "head",
        "el-p",
        "jaime",
        "meline",
        "of",
        "hawaii",
        "aulani",
        "in",
        "the",
        "u.s",
        "today",
    ]
    assert content_words("Jaime Meline") <= content_words("record executive El-P.Jaime Meline (born 1975)")


async def test_number_words_meet_digits(judge: OfflineJudge) -> None:
    chunk = "Johnny Carson received 6 Emmy Awards and a Peabody Award."
    claims = ["Johnny Carson received six Emmy Awards.", "Johnny Carson received seven Emmy Awards."]
    assert (await judge.verify(claims, [chunk])).value == [[Verdict.SUPPORTED], [Verdict.CONTRADICTED]]


async def test_a_roman_numeral_ending_a_name_is_a_number(judge: OfflineJudge) -> None:
    chunk = "Fritz von Brodowski was a German general, killed in French custody during World War II."
    claims = [
        "Fritz von Brodowski was killed during World War I.",
        "Fritz von Brodowski was killed during World War II.",
    ]
    verdicts = (await judge.verify(claims, [chunk])).value
    assert verdicts[0][0] is not Verdict.SUPPORTED
    assert verdicts[1][0] is Verdict.SUPPORTED


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Henry VIII married six times; Henry VII did not.", {"6", "7", "8"}),
        ("Super Bowl XL was played in Detroit.", {"40"}),
        ("He fought in World War I.", {"1"}),
        ("Yesterday I read it. On Monday I left, and then Mary and I met.", set()),
    ],
)
def test_numbers_reads_roman_numerals_of_names_not_the_pronoun(text: str, expected: set[str]) -> None:
    assert numbers(text) == expected


async def test_a_bare_answer_glued_to_a_sentence_in_the_context_is_supported(judge: OfflineJudge) -> None:
    chunk = "Guests include Metro and El-P.Jaime Meline, known as El-P, is an American record executive."
    claims = extract_claims("Jaime Meline", "Which record executive is a guest?")
    assert (await judge.verify(claims, [chunk])).value == [[Verdict.SUPPORTED]]


async def test_an_unbalanced_quote_does_not_merge_sentences_from_two_chunks(judge: OfflineJudge) -> None:
    # pysbd alone keeps everything after '""Et tu' in one sentence: one claim no chunk covers, scored 0.
    first = (
        'The vocative form is "Brute", as used in the quotation ""Et tu, Brute?, made famous by its '
        "occurrence in William Shakespeare's play \"Julius Caesar\", at the moment of Caesar's assassination."
    )
    second = 'Steve Peterson is an American actor who was seen as Stanley in "The Body" at the Matrix Theatre.'
    assert split_sentences(first + " " + second) == [first, second]
    assert await faithfulness(judge, first + " " + second, [first, second]) == 1.0


async def test_words_of_any_script_are_read_whole(judge: OfflineJudge) -> None:
    # Read as ASCII, "Москва" had no words at all (so nothing a chunk could lack: "grounded"), and
    # "Brasília" fell apart into "bras" and "lia".
    brazil = "Brasília ist seit 1960 die Hauptstadt Brasiliens. Москва — столица России. 莫斯科是俄罗斯的首都。"
    assert words("Brasília, Москва") == ["brasília", "москва"]
    assert await faithfulness(judge, "Brasília ist die Hauptstadt Brasiliens.", [brazil]) == 1.0
    question = "What is the capital of Brazil?"
    assert await faithfulness(judge, "Москва", [EIFFEL], question) == 0.0
    assert await faithfulness(judge, "莫斯科", [EIFFEL], question) == 0.0
    assert await faithfulness(judge, "莫斯科", [brazil], "What is the capital of Russia?") == 1.0


async def test_claims_are_sentences_and_clauses(judge: OfflineJudge) -> None:
    answer = (
        "Although Walter Darwin Coy was part of the cast, the narrator of Frontier was Richard Boone. "
        "The show aired on NBC."
    )
    claims = (await judge.extract_claims(answer)).value
    assert claims == [
        "Walter Darwin Coy was part of the cast",
        "the narrator of Frontier was Richard Boone.",
        "The show aired on NBC.",
    ]


def test_a_bare_short_answer_becomes_a_claim_with_its_question() -> None:
    question = "The Oberoi family is part of a hotel company that has a head office in what city?"
    assert extract_claims("Delhi", question) == [f"{question} Delhi"]
    assert claim_focus(f"{question} Delhi") == "Delhi"
    assert extract_claims("Delhi") == ["Delhi"]
    assert extract_claims("   ") == []


def test_evasions_and_questions_are_not_claims() -> None:
    assert extract_claims("I don't know.") == []
    assert extract_claims("I'm not sure. Is it Paris? The capital of France is Paris.") == [
        "The capital of France is Paris."
    ]


def test_a_bare_yes_asserts_the_question_and_a_no_stays_whole() -> None:
    question = "Is the Oberoi Group a hotel company?"
    assert claim_focus(extract_claims("Yes", question)[0]) == "Is the Oberoi Group a hotel company"
    claim = extract_claims("no", question)[0]
    assert claim_focus(claim) == claim
    assert claim_focus("The Oberoi Group is based in Delhi.") == "The Oberoi Group is based in Delhi."


async def test_a_bare_answer_is_supported_only_when_the_context_names_it(judge: OfflineJudge) -> None:
    question = "Which company is based in Delhi?"
    claims = [extract_claims(a, question)[0] for a in ("The Oberoi Group", "Oberoi", "Taj Hotels")]
    verdicts = (await judge.verify(claims, [OBEROI])).value
    assert [row[0] is Verdict.SUPPORTED for row in verdicts] == [True, True, False]


async def test_grounded_answer_scores_above_contradicted_one(judge: OfflineJudge) -> None:
    grounded = await faithfulness(
        judge, "The first Super Bowl was played on January 15, 1967, in Los Angeles.", [SUPER_BOWL]
    )
    # The mixed answer's right claim is the grounded one as written: a reworded restatement ("The first
    # Super Bowl was held on ...") sits at the support model's cut (logit -0.1; SUPPORT_MODEL_CARD.md).
    mixed = await faithfulness(
        judge,
        "The first Super Bowl was played on January 15, 1967, in Los Angeles. It was held in Florida.",
        [SUPER_BOWL],
    )
    wrong = await faithfulness(judge, "The first Super Bowl was played in 1970 in Miami, Florida.", [SUPER_BOWL])
    assert grounded == 1.0
    assert grounded > mixed > wrong


async def test_a_long_answer_taken_from_the_context_is_fully_supported(judge: OfflineJudge) -> None:
    # HaluEval's hallucinated answers are the longer ones; the judge must not learn "long = wrong".
    assert await faithfulness(judge, EIFFEL + " " + SUPER_BOWL, [EIFFEL, SUPER_BOWL]) == 1.0


@pytest.mark.parametrize(
    ("claim", "what"),
    [
        ("The Eiffel Tower was completed in 1901.", "year"),
        ("The Eiffel Tower is 530 metres tall.", "number"),
        ("The Eiffel Tower was designed by the company of Frank Lloyd Wright.", "entity"),
        ("The Eiffel Tower is a wrought-iron lattice tower in Berlin, Germany.", "place"),
    ],
)
async def test_a_wrong_date_number_or_entity_is_not_supported(judge: OfflineJudge, claim: str, what: str) -> None:
    verdicts = (await judge.verify([claim, "The Eiffel Tower was completed in 1889."], [EIFFEL])).value
    assert verdicts[0][0] is not Verdict.SUPPORTED, what
    assert verdicts[1][0] is Verdict.SUPPORTED


async def test_a_year_off_by_one_is_not_supported_where_the_model_prefers_it(judge: OfflineJudge) -> None:
    # Against the support tests' passage the model alone reads 1888 a little above 1889
    # (SUPPORT_MODEL_CARD.md): the number rule, not the model, keeps the wrong year out.
    claims = ["The Eiffel Tower was completed in 1888.", "The Eiffel Tower was completed in 1889."]
    verdicts = (await judge.verify(claims, [SUPPORT_TESTS_EIFFEL])).value
    assert verdicts[0][0] is not Verdict.SUPPORTED
    assert verdicts[1][0] is Verdict.SUPPORTED


async def test_another_span_of_the_passage_is_not_the_answer(judge: OfflineJudge) -> None:
    # Every word of both answers is in the passage, so only reading the question tells them apart. The
    # support model alone reads "Colombia" as supported (a logit near 0, the cut's side); the answer
    # reader (offline/reader.py) puts it far below its own choice, and the judge no longer supports it.
    passage, question, right, other = SPANS[1]
    assert (await faithfulness(judge, right, [passage], question=question)) == 1.0
    assert (await faithfulness(judge, other, [passage], question=question)) == 0.0
    blind = OfflineJudge(answer_reader=_Unread())
    assert (await faithfulness(blind, other, [passage], question=question)) == 1.0


async def test_the_reader_orders_two_spans_the_support_model_orders_the_other_way(judge: OfflineJudge) -> None:
    # "Where did Bach die?" against a passage naming his birthplace and the city he died in: without the
    # reader the judge's support for "Eisenach" is above that for "Leipzig"; with it, below.
    passage, question, right, other = SPANS[4]
    claims = [(await judge.extract_claims(a, question=question)).value[0] for a in (right, other)]
    blind = OfflineJudge(answer_reader=_Unread())
    (with_reader, without) = [(await j.support(claims, [passage])).value for j in (judge, blind)]
    assert with_reader[0][0] > with_reader[1][0]
    assert without[0][0] < without[1][0]


class _Unread(AnswerReader):
    """An answer reader that reads nothing (every margin NaN, as for an answer no chunk states)."""

    def margins(self, items: Sequence[tuple[str, str, str]]) -> npt.NDArray[np.float64]:
        return np.full(len(items), np.nan)


async def test_a_conflicting_year_on_topic_is_contradicted(judge: OfflineJudge) -> None:
    verdicts = (await judge.verify(["The Eiffel Tower was completed in 1901."], [EIFFEL])).value
    assert verdicts == [[Verdict.CONTRADICTED]]


async def test_verify_reads_every_claim_against_every_chunk(judge: OfflineJudge) -> None:
    claims = ["The capital of Brazil is Brasilia.", "The Eiffel Tower is in Paris."]
    verdicts = (await judge.verify(claims, [BRAZIL, EIFFEL, PHOTOSYNTHESIS])).value
    assert [len(row) for row in verdicts] == [3, 3]
    assert verdicts[0][0] is Verdict.SUPPORTED and verdicts[1][1] is Verdict.SUPPORTED
    assert verdicts[0][1] is not Verdict.SUPPORTED and verdicts[1][0] is not Verdict.SUPPORTED
    assert verdicts[0][2] is not Verdict.SUPPORTED and verdicts[1][2] is not Verdict.SUPPORTED
    assert (await judge.verify([], [BRAZIL])).value == []
    assert (await judge.verify(claims, [])).value == [[], []]


async def test_short_answer_in_the_context_is_supported_and_a_swap_is_not(judge: OfflineJudge) -> None:
    question = "The Oberoi family is part of a hotel company that has a head office in what city?"
    right = await faithfulness(judge, "Delhi", [OBEROI], question=question)
    wrong = await faithfulness(
        judge, "The Oberoi family's hotel company is based in Mumbai.", [OBEROI], question=question
    )
    assert right > wrong


async def test_classify_claims_against_a_reference(judge: OfflineJudge) -> None:
    reference = "Leonardo da Vinci painted the Mona Lisa in the early 16th century, between 1503 and 1519."
    claims = ["Leonardo da Vinci painted the Mona Lisa.", "The Mona Lisa was painted by Rembrandt in 1642."]
    assert (await judge.classify_claims(claims, reference)).value == [True, False]


async def test_rate_statements_keeps_relevant_ones(judge: OfflineJudge) -> None:
    statements = [
        "The capital of Brazil is Brasilia.",
        "Brasilia replaced Rio de Janeiro as the capital in 1960.",
        "Photosynthesis releases oxygen.",
    ]
    assert (await judge.rate_statements("What is the capital city of Brazil?", statements)).value == [True, True, False]
    assert (await judge.rate_statements("What is the capital city of Brazil?", [])).value == []


@pytest.mark.parametrize(
    "answer",
    [
        "I don't know.",
        "I'm not sure.",
        "I\u2019m not sure, I don\u2019t know.",
        "I have no idea, sorry.",
        "I cannot answer that question based on the provided documents.",
        "Sorry, I can't help with that request.",
        "The context does not mention who founded the company.",
        "There is no information about this in the provided context.",
        "No clue.",
        "Unknown.",
        "Not mentioned.",
        "It depends.",
        "",
    ],
)
async def test_evasive_answers_are_noncommittal(judge: OfflineJudge, answer: str) -> None:
    assert (await judge.detect_noncommittal(answer)).value is True


@pytest.mark.parametrize(
    "answer",
    [
        "The capital of Brazil is Brasilia.",
        "Delhi",
        "Leonardo da Vinci painted the Mona Lisa between 1503 and 1519.",
        "Scientists are not certain how the pyramids were built, but ramps were probably used.",
        "An unknown artist painted it around 1500.",
        "No.",
        "Yes.",
        "The Eiffel Tower was completed in 1889 for the World's Fair and is 330 metres tall.",
    ],
)
async def test_real_answers_are_not_noncommittal(judge: OfflineJudge, answer: str) -> None:
    assert (await judge.detect_noncommittal(answer)).value is False


async def test_embeddings_are_unit_vectors_and_similar_texts_are_closer(judge: OfflineJudge) -> None:
    texts = ["A cat sits on the mat.", "A kitten is sitting on a rug.", "Interest rates rose by half a point."]
    reply = await judge.embed(texts)
    vectors = np.array(reply.value)
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3
    assert reply.cost.embedding_calls == 1 and reply.cost.prompt_tokens == 0 and reply.cost.seconds > 0


def test_embed_texts_shares_the_judge_vectors(judge: OfflineJudge) -> None:
    texts = ["Brasilia is the capital of Brazil.", ""]
    shared = embed_texts(texts)
    np.testing.assert_allclose(shared, judge.embedder.embed(texts), atol=1e-5)
    assert shared.dtype == np.float32 and shared.shape == (2, 384)
    assert embed_texts([]).shape == (0, 384)


async def test_rate_chunks_ranks_the_relevant_chunk_first(judge: OfflineJudge) -> None:
    chunks = [PHOTOSYNTHESIS, EIFFEL, BRAZIL]
    ratings = (await judge.rate_chunks("What is the capital city of Brazil?", chunks)).value
    assert len(ratings) == 3
    assert all(0.0 <= r <= 1.0 for r in ratings)
    assert int(np.argmax(ratings)) == 2
    assert ratings[2] >= 0.5 > max(ratings[0], ratings[1])
    assert (await judge.rate_chunks("anything", [])).value == []


def test_the_model_loads_once_under_concurrent_threads() -> None:
    embedder = Embedder()
    results = at_once(lambda i: embedder.embed([f"sentence number {i}", "a shared sentence"]), threads=8)
    assert embedder.loads == 1
    assert len(results) == 8
    for result in results:
        np.testing.assert_allclose(result[1], results[0][1], atol=1e-5)


async def test_concurrent_steps_agree_with_sequential_ones(judge: OfflineJudge) -> None:
    claims = ["The Eiffel Tower was completed in 1889.", "The Eiffel Tower is in Berlin."]
    chunk_sets = [[EIFFEL], [BRAZIL], [EIFFEL, BRAZIL], [PHOTOSYNTHESIS]] * 2
    sequential = [(await judge.verify(claims, chunks)).value for chunks in chunk_sets]
    concurrent = await asyncio.gather(*(judge.verify(claims, chunks) for chunks in chunk_sets))
    assert [reply.value for reply in concurrent] == sequential


async def test_long_inputs_are_cut_not_refused(judge: OfflineJudge) -> None:
    long_chunk = " ".join([EIFFEL] * 60)
    verdicts = (await judge.verify(["The Eiffel Tower was completed in 1889."], [long_chunk])).value
    assert verdicts == [[Verdict.SUPPORTED]]
    vectors = np.array((await judge.embed([long_chunk * 3])).value)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("value", [0, -1, 1.5])
def test_max_concurrency_must_be_a_positive_whole_number(value: object) -> None:
    with pytest.raises(ConfigurationError, match=r"max_concurrency=.*whole number >= 1"):
        OfflineJudge(max_concurrency=value)  # type: ignore[arg-type]


async def test_steps_take_their_protocol_argument_names(judge: OfflineJudge) -> None:
    claims = (await judge.extract_claims(text="The capital of Brazil is Brasilia.", question=None)).value
    assert claims == ["The capital of Brazil is Brasilia."]


class _GatedSupportModel(SupportModel):
    """The real support model, held at its first pair until released; records whether it stopped."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.stopped = False

    def run(self, encoded: Any) -> Any:
        if not self.entered.is_set():
            self.entered.set()
            self.release.wait(30)
        return super().run(encoded)

    def pair_logits(self, pairs: Sequence[tuple[str, str]]) -> Any:
        try:
            return super().pair_logits(pairs)
        except Stopped:
            self.stopped = True
            raise


async def test_a_cancelled_call_stops_its_model_work_and_frees_the_slot() -> None:
    model = _GatedSupportModel()
    judge = OfflineJudge(support_model=model)
    claims = [f"Claim number {i} says the tower is {i} metres tall." for i in range(64)]
    task = asyncio.create_task(judge.verify(claims, [EIFFEL]))
    assert await asyncio.to_thread(model.entered.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    model.release.set()
    # The only slot is free again once the abandoned work stopped, and the next call is served.
    assert (await judge.verify(["The Eiffel Tower is in Paris."], [EIFFEL])).value == [[Verdict.SUPPORTED]]
    assert model.stopped


class _CountingEmbedder(Embedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def _run(self, texts: list[str]) -> Any:
        self.texts += len(texts)
        return super()._run(texts)


async def test_a_long_chunk_is_verified_without_embedding_it() -> None:
    filler = " ".join(f"Filler sentence {i} talks about gardening and the weather in spring." for i in range(400))
    chunk = filler + " " + EIFFEL + " " + filler.replace("Filler", "Other")
    embedder = _CountingEmbedder()
    judge = OfflineJudge(embedder=embedder)
    verdicts = (await judge.verify(["The Eiffel Tower was completed in 1889."], [chunk])).value
    assert verdicts == [[Verdict.SUPPORTED]]
    # Verification reads words and the support model (a claim against at most TOP_WINDOWS windows), not
    # embeddings: none of the chunk's 800-odd sentences went through the embedder. rate_chunks embeds the
    # query, the chunk and at most MAX_UNITS_PER_CHUNK of its sentences.
    assert embedder.texts == 0
    assert len(split_sentences(chunk)) > 800
    await judge.rate_chunks("When was the Eiffel Tower completed?", [chunk])
    assert 2 < embedder.texts <= 2 + MAX_UNITS_PER_CHUNK


def test_the_text_caches_keep_usual_chunks_and_never_long_ones() -> None:
    # The words of one 64 KB chunk take about 2 MB: caching hundreds of them would grow without bound
    # in bytes. Usual chunks, which a RAG app retrieves again and again, are cached.
    from ragtrace.judges.offline import text

    # Just past the cache's cap: the length is what the test is about, not the number of sentences.
    long_chunk = " ".join(f"Sentence {i} names the unusual word w{i}." for i in range(250))
    assert len(long_chunk) > text.CACHED_TEXT_CHARS
    usual = EIFFEL
    text._cached_sentences.cache_clear()
    text._cached_facts.cache_clear()
    before = (0, 0)
    for _ in range(2):
        assert text.split_sentences(long_chunk)[-1] == "Sentence 249 names the unusual word w249."
        assert "w249" in text.context_facts(long_chunk).content_words
    after_long = (text._cached_sentences.cache_info().currsize, text._cached_facts.cache_info().currsize)
    assert after_long == before
    text.split_sentences(usual + " Unique tail 17.")
    text.context_facts(usual + " Unique tail 17.")
    assert text._cached_sentences.cache_info().currsize == before[0] + 1
    assert text._cached_facts.cache_info().currsize == before[1] + 1


def test_a_chunk_is_split_once_with_or_without_its_surrounding_space() -> None:
    # The units of a chunk read it as it came, its windows stripped: one pysbd pass must serve both.
    from ragtrace.judges.offline import text

    text._cached_sentences.cache_clear()
    chunk = EIFFEL + " One more sentence 23."
    stripped = text.split_sentences(chunk)
    assert text.split_sentences(f"\n  {chunk}  \n") == stripped
    assert text._cached_sentences.cache_info().currsize == 1
    assert text._cached_sentences.cache_info().hits == 1


def test_content_words_are_kept_for_short_texts_and_cannot_be_changed_by_a_caller() -> None:
    from ragtrace.judges.offline import text

    text.content_words.cache_clear()
    words = text.content_words("The towers were published in Paris.")
    assert words == {"tower", "publish", "pari"}  # the light stemmer cuts a final s
    assert isinstance(words, frozenset)  # kept and shared: a caller's change would reach every later reader
    assert text.content_words("The towers were published in Paris.") is words
    long_text = " ".join(f"word{i}" for i in range(2000))
    assert len(long_text) > text.CACHED_TEXT_CHARS
    assert "word1999" in text.content_words(long_text)
    assert text.content_words.cache_info().currsize == 1


def test_a_long_text_is_cached_under_a_digest_not_as_itself() -> None:
    embedder = _CountingEmbedder()
    long_text = EIFFEL * 40  # about 10 KB, as a whole chunk is embedded for rate_chunks
    first = embedder.embed([long_text, "short text"])
    again = embedder.embed([long_text, "short text"])
    assert embedder.texts == 2  # the second call was served from the cache
    assert np.array_equal(first, again)
    assert all(len(key) <= 256 for key in embedder._cache)  # no 10 KB key kept alive
