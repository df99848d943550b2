"""The offline relevance model and the judge's chunk rating built on it: the shipped model run by onnxruntime
(real weights), and the rating's contract where the model does not read the query."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from ragtrace.judges.offline import OfflineJudge
from ragtrace.judges.offline import calibration as cal
from ragtrace.judges.offline.embedder import Embedder
from ragtrace.judges.offline.relevance import MAX_LOGIT, RelevanceModel, default_relevance_model, feature
from ragtrace.judges.offline.support import WINDOW_WORDS

from ._threads import at_once

RETURNS = "Items can be returned within 30 days."
WINDOWS = "Our store windows are cleaned every week, and what you see is what we sell."


@pytest.fixture(scope="module")
def model() -> RelevanceModel:
    return default_relevance_model()


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge(embedder=Embedder())


class _Fixed(RelevanceModel):
    """A relevance model that gives every chunk one logit (NaN: as for a query it does not read)."""

    def __init__(self, logit: float) -> None:
        super().__init__()
        self.logit = logit

    def relevance(self, question: str, chunks: Sequence[str]) -> npt.NDArray[np.float64]:
        return np.full(len(chunks), self.logit)


def test_a_chunk_that_answers_in_other_words_beats_one_that_repeats_the_words(model: RelevanceModel) -> None:
    # The issue's own example: embedding cosine ranks the chunk that repeats "window" first. The model ranks
    # the answer first, though it does not read it as relevant (its logit is just below 0; the judge's
    # rating of it rose from 0.04 to 0.21, and of the trap from 0.17 to 0.34: docs/offline-judge.md).
    answers, repeats = model.relevance("What is the return window?", [RETURNS, WINDOWS])
    assert answers > repeats
    # Asked in the chunk's own words, the same chunk is read as relevant, well above the trap.
    answers, repeats = model.relevance("How long do I have to return an item?", [RETURNS, WINDOWS])
    assert answers > 0 and answers > repeats + 1


def test_a_long_chunk_is_read_in_windows_and_its_best_window_counts(model: RelevanceModel) -> None:
    filler = " ".join(f"The museum's wing number {i} holds paintings of ships and harbours." for i in range(40))
    assert len(filler.split()) > 2 * WINDOW_WORDS
    answer = "Items can be returned within 30 days of delivery."
    question = "How long do I have to return an item?"
    alone, long_without, long_with = model.relevance(question, [answer, filler, f"{filler} {answer}"])
    # The answer at the end of a chunk three windows long is read (its window is among those read).
    assert long_with > 0 > long_without
    assert alone - long_with <= 3.0  # read in its window about as the answer alone is


def test_empty_chunks_and_no_chunks(model: RelevanceModel) -> None:
    assert model.relevance("Where is the office?", []).shape == (0,)
    empty, office = model.relevance("Where is the office?", ["", "The office is on King Street in Toronto."])
    assert empty == -math.inf
    assert feature(empty) == -MAX_LOGIT
    assert office > 0


def test_a_question_the_model_cannot_read_is_nan(model: RelevanceModel) -> None:
    logits = model.relevance("Где находится офис?", ["Офис находится на Кинг-стрит.", "Погода хорошая."])
    assert np.isnan(logits).all()
    # The whole question's letters decide, whatever follows a question mark in it (a claim's "question?
    # answer" reading would look at the last part only).
    chunk = ["Items can be returned within 30 days."]
    assert not np.isnan(model.relevance("What is the return policy? Объясните подробно.", chunk)).any()
    assert np.isnan(model.relevance("Объясните политику возврата? What is the return window?", chunk)).all()
    assert math.isnan(feature(float("nan")))
    assert feature(100.0) == MAX_LOGIT and feature(-3.5) == -3.5


async def test_the_rating_follows_the_models_logit() -> None:
    embedder = Embedder()
    chunks = ["The office is on King Street in Toronto.", "Shipping is free above $50."]
    sure = await OfflineJudge(embedder=embedder, relevance_model=_Fixed(MAX_LOGIT)).rate_chunks(
        "Where is the office?", chunks
    )
    doubtful = await OfflineJudge(embedder=embedder, relevance_model=_Fixed(-MAX_LOGIT)).rate_chunks(
        "Where is the office?", chunks
    )
    for high, low in zip(sure.value, doubtful.value, strict=True):
        assert 0.0 <= low < high <= 1.0


async def test_where_the_model_does_not_read_the_cosines_rate_alone() -> None:
    embedder = Embedder()
    question = "Где находится офис?"
    chunks = ["Офис находится на Кинг-стрит в Торонто.", "Доставка бесплатна при заказе от 50 долларов."]
    unread = await OfflineJudge(embedder=embedder, relevance_model=_Fixed(math.nan)).rate_chunks(question, chunks)
    shipped = await OfflineJudge(embedder=embedder).rate_chunks(question, chunks)
    assert shipped.value == unread.value  # the shipped model does not read it either: NaN, the same rating
    # The rating of the cosines alone, with its own constants (the rating of before the model).
    q, *vectors = embedder.embed([question, *chunks])
    a, b = cal.RELEVANCE_EMBEDDING_WEIGHTS
    for rating, vector in zip(unread.value, vectors, strict=True):
        # Each chunk is one sentence: its best sentence is itself.
        cosine = float(vector @ q)
        assert rating == pytest.approx(1 / (1 + math.exp(-(cal.RELEVANCE_EMBEDDING_BIAS + (a + b) * cosine))))


async def test_an_empty_chunk_is_rated_zero(judge: OfflineJudge) -> None:
    ratings = (await judge.rate_chunks("", ["", "   ", "The office is on King Street."])).value
    assert ratings[:2] == [0.0, 0.0]
    assert 0.0 <= ratings[2] <= 1.0


def test_the_model_loads_once_across_threads() -> None:
    model = RelevanceModel()
    results = at_once(lambda _: model.relevance("What is the return window?", [RETURNS]), threads=4)
    assert model.loads == 1
    assert len(results) == 4 and all(r[0] == results[0][0] for r in results)
