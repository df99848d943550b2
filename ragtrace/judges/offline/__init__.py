"""The offline judge: scores with no API key, no network and no model download.

``OfflineJudge`` answers the steps small local models can answer honestly: four int8 ONNX models run
by onnxruntime, all-MiniLM-L6-v2 as an embedder (``embedder``), a MiniLM cross-encoder
trained to read whether a passage supports a claim (``support``, ``training/judge``), a MiniLM
extractive reader trained to pick a passage's answer to a question (``reader``, ``training/reader``) and a
MiniLM cross-encoder trained to read whether a passage answers a question (``relevance``,
``training/relevance``), with
text evidence (``text``), through a grounding model calibrated on HaluEval
(``grounding``, ``bench/calibrate_offline.py``):

- ``extract_claims``: sentences (pysbd) split into clauses; a bare short answer becomes one claim
  together with its question.
- ``verify`` / ``classify_claims``: the grounding model (support model, answer reader and word
  evidence), claim x chunk.
- ``rate_statements``: query-statement cosine against a fitted threshold.
- ``detect_noncommittal``: evasive wording, or a short answer close to known evasions.
- ``embed``: unit vectors.
- ``rate_chunks``: the relevance model's reading of query and chunk with their embedding similarity, mapped
  to [0, 1] by a fitted logistic calibration.

It does not offer ``generate_questions``, ``rate_answer`` or G-Eval: those need a generative model,
and a number made up from similarity would pass for a judgement it is not. Asking raises
``JudgeCapabilityError``, so the metric is skipped with ``judge_lacks_capability``.

Cost: every step is one call (``embedding_calls=1``: local model runs, no chat; none for a reading
it remembers), 0 tokens, and the seconds it took. Model work runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn, TypeVar

import numpy as np
import numpy.typing as npt

from ragtrace._cost import Cost
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges._base import (
    CLASSIFY_CLAIMS,
    DETECT_NONCOMMITTAL,
    EMBED,
    EXTRACT_CLAIMS,
    GENERATE_QUESTIONS,
    GEVAL,
    RATE_ANSWER,
    RATE_CHUNKS,
    RATE_STATEMENTS,
    VERIFY,
    GEvalRating,
    JudgeCapabilityError,
    JudgeReply,
    Question,
    Rating,
    Verdict,
    agreeing,
)
from ragtrace.judges._capabilities import serves_every_step
from ragtrace.judges.offline import calibration as cal
from ragtrace.judges.offline import grounding
from ragtrace.judges.offline import relevance as _relevance
from ragtrace.judges.offline import text as _text
from ragtrace.judges.offline.embedder import Embedder, check_stop, default_embedder, stop_when
from ragtrace.judges.offline.reader import AnswerReader, default_answer_reader
from ragtrace.judges.offline.readings import Readings
from ragtrace.judges.offline.relevance import RelevanceModel, default_relevance_model
from ragtrace.judges.offline.support import SupportModel, default_support_model

__all__ = ["Embedder", "OfflineJudge", "embed_texts"]

T = TypeVar("T")

NAME = "offline:minilm-int8"

# Short evasions the embedding check compares a short answer with.
_NONCOMMITTAL_PROTOTYPES = (
    "I don't know.",
    "I'm not sure.",
    "I have no idea.",
    "I cannot answer that.",
    "Sorry, I can't help with that.",
    "There is no information about that in the context.",
    "The documents do not say.",
    "It is not possible to tell from the given information.",
)
_SHORT_ANSWER_WORDS = 20


def embed_texts(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Unit MiniLM vectors of ``texts`` (``(n, 384)`` float32) from the process-wide embedder.

    The same vectors the offline judge uses: an app may retrieve by cosine (a dot product) over them.
    """
    return default_embedder().embed(texts)


@serves_every_step
class OfflineJudge:
    """The judge that needs nothing but the installed package. See the module docstring.

    ``embedder`` defaults to the process-wide one (loaded lazily, once). ``max_concurrency`` bounds
    model work in flight across all event loops (default 1: the app shares the machine).
    """

    name: str = NAME
    capabilities: frozenset[str] = frozenset(
        {EXTRACT_CLAIMS, VERIFY, CLASSIFY_CLAIMS, RATE_STATEMENTS, DETECT_NONCOMMITTAL, EMBED, RATE_CHUNKS}
    )

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        support_model: SupportModel | None = None,
        answer_reader: AnswerReader | None = None,
        relevance_model: RelevanceModel | None = None,
        max_concurrency: int = 1,
    ) -> None:
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ConfigurationError(f"OfflineJudge(max_concurrency={max_concurrency!r}): give a whole number >= 1")
        self._embedder = embedder
        self._support_model = support_model
        self._answer_reader = answer_reader
        self._relevance_model = relevance_model
        self._slots = threading.BoundedSemaphore(max_concurrency)
        # The tiered judge asks ``support`` (to route) and then ``verify`` of the same record.
        self._readings: Readings[list[list[grounding.Grounding]]] = Readings()

    def __repr__(self) -> str:
        return f"OfflineJudge(name={self.name!r})"

    @property
    def embedder(self) -> Embedder:
        """The embedder this judge uses."""
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    @property
    def support_model(self) -> SupportModel:
        """The support model (cross-encoder) this judge verifies claims with."""
        if self._support_model is None:
            self._support_model = default_support_model()
        return self._support_model

    @property
    def answer_reader(self) -> AnswerReader:
        """The answer reader this judge verifies bare answers with (beside the support model)."""
        if self._answer_reader is None:
            self._answer_reader = default_answer_reader()
        return self._answer_reader

    @property
    def relevance_model(self) -> RelevanceModel:
        """The relevance model (cross-encoder) this judge rates chunks with (beside the embedder)."""
        if self._relevance_model is None:
            self._relevance_model = default_relevance_model()
        return self._relevance_model

    def load(self) -> None:
        """Load the four models now (otherwise the first step that needs each does)."""
        self.embedder.load()
        self.support_model.load()
        self.answer_reader.load()
        self.relevance_model.load()

    async def _run(self, work: Callable[[], T]) -> JudgeReply[T]:
        stop = threading.Event()

        def timed() -> tuple[T, float]:
            with self._slots, stop_when(stop):
                # A call cancelled while it waited for the slot never starts its work.
                check_stop()
                start = time.perf_counter()
                value = work()
                return value, time.perf_counter() - start

        try:
            value, seconds = await asyncio.to_thread(timed)
        except asyncio.CancelledError:
            # The thread cannot be cancelled; it stops at its next check and frees the slot.
            stop.set()
            raise
        return JudgeReply(value, Cost(embedding_calls=1, seconds=seconds))

    def _unsupported(self, step: str) -> NoReturn:
        raise JudgeCapabilityError(self.name, step)

    # -- Steps it offers --------------------------------------------------------------------------------

    async def extract_claims(self, text: str, *, question: str | None = None) -> JudgeReply[list[str]]:
        """Sentences split into clauses, without questions and evasions; a bare short answer becomes
        one claim "<question>? <answer>"."""
        return await self._run(lambda: _text.extract_claims(text, question))

    async def verify(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        """``value[claim][chunk]`` from the grounding model, with its calibrated support probability on the
        shared scale (``JudgeReply.support``: the calibrated threshold at 0.5; moved to the threshold where
        the word rules decided against the model)."""

        reply = await self._grounded(claims, chunks, lambda rows: rows)
        cut = cal.SUPPORT_THRESHOLD
        return JudgeReply(
            [[g.verdict for g in row] for row in reply.value],
            reply.cost,
            support=[[agreeing(g.probability, g.verdict, cut) for g in row] for row in reply.value],
        )

    async def support(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Beyond the protocol: the grounding model's support probability, ``value[claim][chunk]``.

        ``verify`` says SUPPORTED where this is at least the calibrated threshold, unless a word rule of
        ``grounding.verdict_of`` decides otherwise (a restatement, a conflicting number, a substitution);
        benchmarks use it to measure the ranking the verdicts are cut from.
        """

        return await self._grounded(claims, chunks, lambda rows: [[g.probability for g in row] for row in rows])

    async def _grounded(
        self, claims: Sequence[str], chunks: Sequence[str], shape: Callable[[list[list[grounding.Grounding]]], T]
    ) -> JudgeReply[T]:
        """``shape`` of ``grounding.ground`` of the claims against the chunks, remembered for the last few
        records: a remembered reading (the tiered judge's ``support`` then ``verify``) is not a call."""
        ran = [True]

        def work() -> T:
            model, reader = self.support_model, self.answer_reader
            rows, ran[0] = self._readings.get(claims, chunks, lambda: grounding.ground(model, claims, chunks, reader))
            return shape(rows)

        reply = await self._run(work)
        return reply if ran[0] else JudgeReply(reply.value, dataclasses.replace(reply.cost, embedding_calls=0))

    async def classify_claims(self, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
        """True for a claim the reference supports (same grounding model, the reference as the chunk)."""

        def work() -> list[bool]:
            rows = grounding.ground(self.support_model, claims, [reference], self.answer_reader)
            return [bool(row) and row[0].verdict is Verdict.SUPPORTED for row in rows]

        return await self._run(work)

    async def rate_statements(self, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
        """True for a statement whose cosine with the query reaches the calibrated threshold."""

        def work() -> list[bool]:
            if not statements:
                return []
            vectors = self.embedder.embed([query, *statements])
            sims = vectors[1:] @ vectors[0]
            return [bool(s >= cal.STATEMENT_RELEVANCE_THRESHOLD) for s in sims]

        return await self._run(work)

    async def detect_noncommittal(self, answer: str) -> JudgeReply[bool]:
        """True for evasive wording anywhere, or a short answer close to a known evasion."""

        def work() -> bool:
            stripped = answer.strip()
            if not stripped or _text.noncommittal_wording(stripped):
                return True
            if len(stripped.split()) > _SHORT_ANSWER_WORDS:
                return False
            vectors = self.embedder.embed([stripped, *_NONCOMMITTAL_PROTOTYPES])
            return bool(float(np.max(vectors[1:] @ vectors[0])) >= cal.NONCOMMITTAL_MIN_COSINE)

        return await self._run(work)

    async def embed(self, texts: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Unit vectors, one per text."""
        return await self._run(lambda: self.embedder.embed(texts).tolist())

    async def rate_chunks(self, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
        """Each chunk's relevance in [0, 1]: a logistic map of the relevance model's logit for the query
        and the chunk, the query's cosine with the whole chunk and with its best-matching sentence,
        fitted on HaluEval questions and their knowledge (the cosines alone where the model does not
        read the query); an empty chunk 0."""

        def work() -> list[float]:
            prepared = grounding.prepare_chunks(self.embedder, chunks, focus=[query])
            logits = self.relevance_model.relevance(query, chunks)
            return [_rate_chunk(self.embedder, query, p, float(z)) for p, z in zip(prepared, logits, strict=True)]

        if not chunks:
            return JudgeReply([], Cost(embedding_calls=0))
        return await self._run(work)

    # -- Steps it does not offer -----------------------------------------------------------------------

    async def generate_questions(self, answer: str, n: int) -> JudgeReply[list[Question]]:
        """Not offered: questions need a generative model."""
        self._unsupported(GENERATE_QUESTIONS)

    async def rate_answer(self, query: str, answer: str) -> JudgeReply[Rating]:
        """Not offered: similarity says the answer is on topic, not that it answers well."""
        self._unsupported(RATE_ANSWER)

    async def geval_steps(self, criteria: str) -> JudgeReply[list[str]]:
        """Not offered: G-Eval needs a generative model."""
        self._unsupported(GEVAL)

    async def geval_score(
        self,
        criteria: str,
        steps: Sequence[str],
        params: Mapping[str, str],
        score_range: tuple[int, int],
    ) -> JudgeReply[GEvalRating]:
        """Not offered: G-Eval needs a generative model."""
        self._unsupported(GEVAL)

    async def aclose(self) -> None:
        """Nothing to release: the model is shared by the process and freed with it."""


def _rate_chunk(embedder: Embedder, query: str, chunk: grounding.ChunkUnits, logit: float) -> float:
    """Relevance in [0, 1] of one prepared chunk to the query, given the relevance model's ``logit`` (NaN: not
    read, the cosines alone rate it). An empty chunk answers nothing: 0."""
    if not chunk.text.strip():
        return 0.0
    q, whole = embedder.embed([query, chunk.text])
    return _relevance.rating(_relevance.rating_inputs(q, whole, chunk.vectors, logit))
