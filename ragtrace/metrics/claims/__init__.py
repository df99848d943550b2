"""The claim-based family: the answer's claims are extracted once and reused by every metric here.

Judge steps (shared through a ``Suite``'s memoizing judge): ``extract_claims`` of the answer, one
``verify`` of all answer claims x all chunks; with a reference, ``extract_claims`` of the reference,
one ``classify_claims`` of the answer claims against it and one ``verify`` of reference claims x chunks.

| metric | value | direction |
|---|---|---|
| faithfulness | claims supported by some chunk / claims (weighed by support, ``_faithfulness``) | higher |
| hallucination | claims supported by no chunk / claims (= 1 - faithfulness) | lower |
| hallucinated_claim | 1 - the least-supported claim's support: > 0.5 when one claim is below the cut | lower |
| context_contradiction | chunks contradicting at least one claim / chunks | lower |
| answer_relevancy | claims relevant to the query / claims | higher |
| noise_sensitivity | claims the reference does not support / claims | lower |
| relevant_noise_sensitivity | incorrect claims entailed by a relevant chunk / claims | lower |
| irrelevant_noise_sensitivity | incorrect claims entailed by an irrelevant chunk / claims | lower |
| context_recall | reference claims supported by some chunk / reference claims | higher |

A chunk is *relevant* when it supports at least one reference claim. The arithmetic is in the pure
functions of ``_claims_arithmetic`` (re-exported here), tested without a judge.

Explanations carry counts only, never record text (they go on spans even when content capture is
off); the claims behind a score are in ``details`` (``unsupported``, ``irrelevant``, ``missing``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ragtrace.judges._base import CLASSIFY_CLAIMS, EXTRACT_CLAIMS, RATE_STATEMENTS, VERIFY, Verdict
from ragtrace.metrics._base import REASON_NO_CLAIMS, Direction, Score
from ragtrace.metrics._metric import NEEDS_CHUNKS, NEEDS_REFERENCE, JudgeMetric
from ragtrace.metrics._steps import (
    Steps,
    answer_claims,
    check_flags,
    correct_flags,
    reference_claims,
    verdicts,
)
from ragtrace.metrics.claims.arithmetic import (
    SUPPORT_CUT,
    claim_support,
    contradicted_chunks,
    faithfulness_label,
    fraction,
    least_support,
    noisy_claims,
    picked,
    supported_by_any,
    supporting_chunks,
)
from ragtrace.metrics.claims.base import AnswerClaimsMetric
from ragtrace.metrics.claims.claim_verdicts import ClaimVerdict
from ragtrace.metrics.claims.faithfulness import SCORINGS, Faithfulness, HallucinatedClaim, Hallucination, Scoring

if TYPE_CHECKING:
    from ragtrace._record import RagRecord

__all__ = [
    "SCORINGS",
    "SUPPORT_CUT",
    "AnswerRelevancy",
    "ClaimVerdict",
    "ContextContradiction",
    "ContextRecall",
    "Faithfulness",
    "HallucinatedClaim",
    "Hallucination",
    "IrrelevantNoiseSensitivity",
    "NoiseSensitivity",
    "RelevantNoiseSensitivity",
    "Scoring",
    "claim_support",
    "contradicted_chunks",
    "faithfulness_label",
    "fraction",
    "least_support",
    "noisy_claims",
    "picked",
    "supported_by_any",
    "supporting_chunks",
]


class ContextContradiction(AnswerClaimsMetric):
    """Chunks that the answer contradicts (a chunk contradicting at least one claim), over all chunks."""

    name = "context_contradiction"
    direction: Direction = "lower"
    needs = frozenset({NEEDS_CHUNKS})
    capabilities = frozenset({EXTRACT_CLAIMS, VERIFY})

    async def _measure_claims(self, record: RagRecord, steps: Steps, claims: list[str]) -> Score:
        flags = contradicted_chunks(await verdicts(steps, claims, record.texts), len(record.chunks))
        n = sum(flags)
        return self.measured(
            fraction(flags),
            steps,
            label="contradiction" if n else "none",
            explanation=f"the answer contradicts {n} of {len(flags)} chunks",
            details={"chunks": len(flags), "contradicted_chunks": n},
        )


class AnswerRelevancy(AnswerClaimsMetric):
    """Statements of the answer (its extracted claims) relevant to the query, over all statements."""

    name = "answer_relevancy"
    capabilities = frozenset({EXTRACT_CLAIMS, RATE_STATEMENTS})
    uses_query = True

    async def _measure_claims(self, record: RagRecord, steps: Steps, claims: list[str]) -> Score:
        reply = await steps(steps.judge.rate_statements(record.query, claims))
        relevant = check_flags(reply, len(claims), "relevance flags")
        return self.measured(
            fraction(relevant),
            steps,
            explanation=f"{sum(relevant)} of {len(claims)} statements relevant to the query",
            details={
                "statements": len(claims),
                "relevant_statements": sum(relevant),
                "irrelevant": picked(claims, relevant, False),
            },
        )


class NoiseSensitivity(AnswerClaimsMetric):
    """Claims of the answer that the reference does not support, over all claims."""

    name = "noise_sensitivity"
    direction: Direction = "lower"
    needs = frozenset({NEEDS_REFERENCE})
    capabilities = frozenset({EXTRACT_CLAIMS, CLASSIFY_CLAIMS})

    async def _measure_claims(self, record: RagRecord, steps: Steps, claims: list[str]) -> Score:
        correct = await correct_flags(steps, claims, record.reference or "")
        incorrect = [not c for c in correct]
        return self.measured(
            fraction(incorrect),
            steps,
            explanation=f"{sum(incorrect)} of {len(claims)} claims not supported by the reference",
            details={"claims": len(claims), "incorrect_claims": sum(incorrect)},
        )


class _ChunkNoise(AnswerClaimsMetric):
    """Incorrect answer claims entailed by relevant (or irrelevant) chunks, over all claims."""

    direction: Direction = "lower"
    needs = frozenset({NEEDS_REFERENCE, NEEDS_CHUNKS})
    capabilities = frozenset({EXTRACT_CLAIMS, CLASSIFY_CLAIMS, VERIFY})
    relevant: bool

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        # Overrides the frame to extract the answer's and the reference's claims concurrently.
        claims, ref_claims = await asyncio.gather(answer_claims(steps, record), reference_claims(steps, record))
        if not claims:
            return self._no_claims(steps)
        texts = record.texts
        correct, answer_matrix, ref_matrix = await asyncio.gather(
            correct_flags(steps, claims, record.reference or ""),
            verdicts(steps, claims, texts),
            # No reference claims: no chunk can be relevant (and no call is needed to know it).
            verdicts(steps, ref_claims, texts) if ref_claims else _empty_matrix(),
        )
        relevant = supporting_chunks(ref_matrix, len(texts))
        mask = relevant if self.relevant else [not r for r in relevant]
        noisy = noisy_claims(correct, answer_matrix, mask)
        kind = "relevant" if self.relevant else "irrelevant"
        return self.measured(
            fraction(noisy),
            steps,
            explanation=f"{sum(noisy)} of {len(claims)} claims incorrect yet entailed by {kind} chunks",
            details={"claims": len(claims), "incorrect_claims": correct.count(False), "relevant_chunks": sum(relevant)},
        )


async def _empty_matrix() -> list[list[Verdict]]:
    return []


class RelevantNoiseSensitivity(_ChunkNoise):
    """Incorrect claims entailed by a relevant chunk (one supporting a reference claim), over all claims."""

    name = "relevant_noise_sensitivity"
    relevant = True


class IrrelevantNoiseSensitivity(_ChunkNoise):
    """Incorrect claims entailed by an irrelevant chunk (one supporting no reference claim), over all claims."""

    name = "irrelevant_noise_sensitivity"
    relevant = False


class ContextRecall(JudgeMetric):
    """Reference claims attributable to (supported by) at least one chunk, over all reference claims."""

    name = "context_recall"
    needs = frozenset({NEEDS_REFERENCE, NEEDS_CHUNKS})
    capabilities = frozenset({EXTRACT_CLAIMS, VERIFY})
    uses_answer = False

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        ref_claims = await reference_claims(steps, record)
        if not ref_claims:
            return self.absent("unmeasured", REASON_NO_CLAIMS, "the reference makes no factual claim", steps)
        found = supported_by_any(await verdicts(steps, ref_claims, record.texts))
        return self.measured(
            fraction(found),
            steps,
            explanation=f"{sum(found)} of {len(ref_claims)} reference claims found in the chunks",
            details={
                "reference_claims": len(ref_claims),
                "attributed_claims": sum(found),
                "missing": picked(ref_claims, found, False),
            },
        )
