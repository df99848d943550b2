"""``TieredJudge``: the offline judge scores every record, an LLM judge re-scores the doubtful ones.

``judge="tiered"`` (or ``RAGTRACE_JUDGE=tiered``) builds it from ``OfflineJudge()`` and
``OpenAIJudge()`` (configured by the ``RAGTRACE_JUDGE_*`` variables as usual). Routing, per record:

- ``verify`` (faithfulness, hallucination, ...): the offline tier's support probability of every claim
  (``OfflineJudge.support``) is computed first. When some claim's best probability lies within
  ``margin`` of the offline tier's threshold (it could go either way), or the record falls in the
  fixed audit share (``audit_share``, drawn from a hash of the claims and chunks: deterministic per
  record, the same in every process), the LLM tier answers ``verify`` instead. Else the offline tier
  does. The audit share keeps the two tiers measured against each other on records the offline tier
  is sure about.
- every other step the offline tier offers (claims, chunk ratings, ...) is the offline tier's.
- steps only the LLM offers (``generate_questions``, ``rate_answer``, G-Eval) are not offered unless
  ``llm_only_steps=True``: they would cost an LLM call on every record, which is what the tiers are
  there to avoid. Metrics that need them are skipped with ``judge_lacks_capability``, as with the
  offline judge alone.

Every routed reply names its tier (``JudgeReply.judge``), so each score carries the attribute
``ragtrace.eval.<metric>.judge`` with the tier that produced it. When the LLM tier fails on a doubtful
record (down, timeout, invalid reply), the offline tier's verdicts are used and say so; the failure is
logged (at most once a minute) and counted in ``llm_failures``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace._rate_limit import Every
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges._base import (
    GENERATE_QUESTIONS,
    GEVAL,
    RATE_ANSWER,
    GEvalRating,
    Judge,
    JudgeCapabilityError,
    JudgeError,
    JudgeReply,
    Question,
    Rating,
    Verdict,
    agreeing,
)
from ragtrace.judges._capabilities import serves_every_step
from ragtrace.judges.tiered.routing import (
    DEFAULT_AUDIT_SHARE,
    DEFAULT_MARGIN,
    audit_draw,
    banded,
    needs_llm,
    offline_threshold,
    record_key,
    rescore,
    supported_claims,
)

__all__ = ["TieredJudge", "audit_draw", "needs_llm", "rescore"]

_logger = logging.getLogger("ragtrace")
_LLM_ONLY = frozenset({GENERATE_QUESTIONS, RATE_ANSWER, GEVAL})


@serves_every_step
class TieredJudge:
    """Offline judge first, LLM judge for the doubtful records and an audit share; see the module docstring.

    ``offline`` defaults to ``OfflineJudge()`` and must offer ``support(claims, chunks)``; ``llm``
    defaults to ``OpenAIJudge()``. ``threshold`` defaults to the offline tier's calibrated support
    threshold (its ``support_threshold`` attribute when it has one). Wrong settings raise ``ConfigurationError``.
    """

    def __init__(
        self,
        offline: Judge | None = None,
        llm: Judge | None = None,
        *,
        threshold: float | None = None,
        margin: float = DEFAULT_MARGIN,
        audit_share: float = DEFAULT_AUDIT_SHARE,
        llm_only_steps: bool = False,
    ) -> None:
        if offline is None:
            from ragtrace.judges.offline import OfflineJudge

            offline = OfflineJudge()
        if llm is None:
            from ragtrace.judges.openai import OpenAIJudge

            llm = OpenAIJudge()
        if not callable(getattr(offline, "support", None)):
            raise ConfigurationError(
                f"TieredJudge: the offline tier {offline.name!r} has no support(claims, chunks): "
                "pass an OfflineJudge (or a judge that gives support probabilities)"
            )
        for label, value, low, high in (("margin", margin, 0.0, 1.0), ("audit_share", audit_share, 0.0, 1.0)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ConfigurationError(f"TieredJudge({label}={value!r}): give a number from {low} to {high}")
        self.offline = offline
        self.llm = llm
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold < 1.0
        ):
            raise ConfigurationError(f"TieredJudge(threshold={threshold!r}): give a number between 0 and 1")
        self.threshold = offline_threshold(offline) if threshold is None else float(threshold)
        self.margin = float(margin)
        self.audit_share = float(audit_share)
        self.name = f"tiered:{offline.name}+{llm.name}"
        extra = (llm.capabilities & _LLM_ONLY) - offline.capabilities if llm_only_steps else frozenset()
        self.capabilities: frozenset[str] = offline.capabilities | extra
        self._llm_only_steps = llm_only_steps
        self.llm_records = 0
        """Records whose verification the LLM tier was asked for."""
        self.records = 0
        """Records whose verification was routed."""
        self.llm_failures = 0
        """Of those asked of the LLM, the ones it failed (the offline tier answered)."""
        self._lock = threading.Lock()
        self._warnings = Every(60.0)

    def __repr__(self) -> str:
        tiers = f"offline={self.offline!r}, llm={self.llm!r}"
        return f"TieredJudge({tiers}, margin={self.margin}, audit_share={self.audit_share})"

    # -- routing -------------------------------------------------------------------------------------

    async def _route(
        self, claims: Sequence[str], chunks: Sequence[str]
    ) -> tuple[bool, bool, JudgeReply[list[list[float]]]]:
        """Whether the LLM answers, whether because a claim is doubtful (else: the audit draw), and the
        offline probabilities it was decided on."""
        support = getattr(self.offline, "support")  # noqa: B009 - checked callable in __init__
        probabilities: JudgeReply[list[list[float]]] = await support(claims, chunks)
        best = [max(row) if row else 0.0 for row in probabilities.value]
        doubtful = needs_llm(best, "", threshold=self.threshold, margin=self.margin, audit_share=0.0)
        go = doubtful or needs_llm(
            best,
            record_key(claims, chunks),
            threshold=self.threshold,
            margin=self.margin,
            audit_share=self.audit_share,
        )
        with self._lock:
            self.records += 1
            self.llm_records += go
        return go, doubtful, probabilities

    def _llm_failed(self, error: JudgeError) -> None:
        with self._lock:
            self.llm_failures += 1
        if self._warnings.allow() is not None:
            _logger.warning(
                "ragtrace: the tiered judge's LLM tier %s failed (%s: %s); the offline tier's verdicts stand",
                self.llm.name,
                error.error_type,
                error,
            )

    async def verify(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        """The offline tier's verdicts (all of its rules, numbers and negations included), or the LLM
        tier's for a doubtful or audited record.

        ``support`` is on the shared scale whichever tier decided: the offline tier's own, or the LLM's
        P(yes) placed in the doubt band (``rescore``, as ``support`` does) and then on the shared scale,
        on its verdict's side of 0.5."""
        if not claims or not chunks:
            return await self.offline.verify(claims, chunks)
        go, doubtful, probabilities = await self._route(claims, chunks)
        cost = probabilities.cost
        audit: tuple[JudgeReply[list[list[Verdict]]], list[list[float]]] | None = None
        if go:
            try:
                reply = await self.llm.verify(claims, chunks)
                scored = banded(reply, len(claims), len(chunks), self.threshold, self.margin, self.llm.name)
            except JudgeError as error:
                self._llm_failed(error)
                cost = cost + error.cost
            else:
                if doubtful:
                    return JudgeReply(reply.value, cost + reply.cost, judge=self.llm.name, support=scored)
                audit = reply, scored
        # The offline judge remembers the record it just read for routing: this reads it once.
        offline = await self.offline.verify(claims, chunks)
        if audit is not None:
            audited, audited_support = audit
            cost = cost + audited.cost
            llm_says, offline_says = (supported_claims(r.value) for r in (audited, offline))
            if llm_says != offline_says:
                # The audit found the offline tier wrong on a record it was sure of: the LLM's reading stands.
                return JudgeReply(audited.value, cost + offline.cost, judge=self.llm.name, support=audited_support)
            # The audit agrees: the offline reading keeps its score (the LLM call measured the agreement).
        support = offline.support
        if support is None:  # an offline tier whose verify gives verdicts only: its routing probabilities
            support = [
                [agreeing(p, v, self.threshold) for p, v in zip(ps, vs, strict=True)]
                for ps, vs in zip(probabilities.value, offline.value, strict=True)
            ]
        return JudgeReply(offline.value, cost + offline.cost, judge=self.offline.name, support=support)

    async def support(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Support scores ``value[claim][chunk]``: the offline tier's probabilities, or, for a doubtful or
        audited record, the LLM tier's (its ``support``, else its verdicts as 1.0/0.0) re-scored within
        the doubt band (``rescore``): the LLM orders the records the offline tier could not, and the
        records the offline tier is sure of keep their places around them."""
        if not claims or not chunks:
            return JudgeReply([[] for _ in claims])
        go, _, probabilities = await self._route(claims, chunks)
        if go:
            try:
                llm_support = getattr(self.llm, "support", None)
                if callable(llm_support):
                    reply: JudgeReply[list[list[float]]] = await llm_support(claims, chunks)
                    value = reply.value
                else:
                    verdicts = await self.llm.verify(claims, chunks)
                    reply = JudgeReply([], verdicts.cost)
                    value = [[1.0 if v is Verdict.SUPPORTED else 0.0 for v in row] for row in verdicts.value]
            except JudgeError as error:
                self._llm_failed(error)
                return JudgeReply(probabilities.value, probabilities.cost + error.cost, judge=self.offline.name)
            banded = [[rescore(p, self.threshold, self.margin) if p > 0.0 else 0.0 for p in row] for row in value]
            return JudgeReply(banded, probabilities.cost + reply.cost, judge=self.llm.name)
        return JudgeReply(probabilities.value, probabilities.cost, judge=self.offline.name)

    # -- the offline tier's steps --------------------------------------------------------------------

    @staticmethod
    def _by(reply: JudgeReply[Any], judge: Judge) -> JudgeReply[Any]:
        return JudgeReply(reply.value, reply.cost, judge=judge.name)

    async def extract_claims(self, text: str, *, question: str | None = None) -> JudgeReply[list[str]]:
        # Claims prepare a verdict; the verdict's tier is the one that decided (not named here).
        return await self.offline.extract_claims(text, question=question)

    async def classify_claims(self, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
        return self._by(await self.offline.classify_claims(claims, reference), self.offline)

    async def rate_statements(self, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
        return self._by(await self.offline.rate_statements(query, statements), self.offline)

    async def detect_noncommittal(self, answer: str) -> JudgeReply[bool]:
        return self._by(await self.offline.detect_noncommittal(answer), self.offline)

    async def embed(self, texts: Sequence[str]) -> JudgeReply[list[list[float]]]:
        return await self.offline.embed(texts)

    async def rate_chunks(self, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
        return self._by(await self.offline.rate_chunks(query, chunks), self.offline)

    # -- steps only the LLM tier offers --------------------------------------------------------------

    def _llm_only(self, step: str) -> Judge:
        if not self._llm_only_steps or step not in self.capabilities:
            raise JudgeCapabilityError(self.name, step)
        return self.llm

    async def generate_questions(self, answer: str, n: int) -> JudgeReply[list[Question]]:
        llm = self._llm_only(GENERATE_QUESTIONS)
        return self._by(await llm.generate_questions(answer, n), llm)

    async def rate_answer(self, query: str, answer: str) -> JudgeReply[Rating]:
        llm = self._llm_only(RATE_ANSWER)
        return self._by(await llm.rate_answer(query, answer), llm)

    async def geval_steps(self, criteria: str) -> JudgeReply[list[str]]:
        return await self._llm_only(GEVAL).geval_steps(criteria)

    async def geval_score(
        self,
        criteria: str,
        steps: Sequence[str],
        params: Mapping[str, str],
        score_range: tuple[int, int],
    ) -> JudgeReply[GEvalRating]:
        llm = self._llm_only(GEVAL)
        return self._by(await llm.geval_score(criteria, steps, params, score_range), llm)

    async def aclose(self) -> None:
        """Close both tiers. Idempotent."""
        try:
            await self.llm.aclose()
        finally:
            await self.offline.aclose()
