"""The offline grounding model: does a context support a claim, contradict it, or neither?

For one claim and one chunk the model computes a few features (``FEATURES``):

- the aligned support (``aligned``): the logit of the support model, a cross-encoder that reads claim
  and chunk together (``support``), combined with whether the chunk states the claim's words together
  and in its order (``alignment``): the one feature that reads meaning, not words alone,
- the share of the claim's content words found in the chunk, and around its best unit (the sentence
  sharing the most content words with it, with its neighbour sentences), and the number it lacks; for
  a bare answer joined to its question, the words of the answer (``claim_focus``),
- the claim's proper names and numbers that the chunk never mentions,
- numbers, years and months the best unit's window states otherwise (another year where the claim
  has one),
- a negation in one of claim and best unit but not the other,
- the share of the claim's consecutive content words the chunk states in that order (``order``),
- for a bare answer joined to its question, the answer reader's margin (``answer_reading``,
  ``reader``): how far below its own choice of span the reader ranks the answer,

and turns them into a probability of support with a logistic layer fitted by
``bench/calibrate_offline.py`` on HaluEval (constants in ``calibration``), each weight held
to its sign (``FEATURE_SIGNS``). The verdict is SUPPORTED at or above the fitted threshold or when the
chunk restates the claim (``restated``), never with a ``conflicting`` number or with another of the
chunk's names or numbers in the place of its sentence's own (``substitution``); a bare answer joined to
its question is SUPPORTED when the chunk names it and the support model and the answer reader read it
as the answer to the question (``bare_answer_named``). Otherwise CONTRADICTED when the chunk is on the claim's topic and
states another number, date or polarity, or a substitution, else NEITHER. No embedding is computed for
verification (``prepare_chunks`` serves ``rate_chunks``).

The word-level features are evidence matching, not inference; what the support model adds, and what
it still cannot tell apart, is measured in docs/offline-judge.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragtrace.judges._base import Verdict
from ragtrace.judges._question_claims import split_answer_claim
from ragtrace.judges.offline import aligned, substitution, text
from ragtrace.judges.offline import calibration as cal
from ragtrace.judges.offline.alignment import PassageTokens, alignment, passage_tokens
from ragtrace.judges.offline.embedder import Embedder, Vectors, check_stop
from ragtrace.judges.offline.reader import AnswerReader
from ragtrace.judges.offline.support import SupportModel, reads

FEATURES = (
    "coverage",
    "missing_words",
    "best_unit_coverage",
    "missing_entities",
    "missing_numbers",
    "conflicts",
    "negation_mismatch",
    "model_support",
    "order",
    "answer_reading",
)
FEATURE_SIGNS = (1, -1, 1, -1, -1, -1, -1, 1, 1, 1)
"""The direction each feature may push support in (order of ``FEATURES``): more similarity or
coverage can only help, more missing or conflicting evidence can only hurt. The calibration drops a
feature whose fitted weight comes out the other way (a data set's artifact, not evidence)."""
_CAP = 3.0
_MAX_MISSING_WORDS = 10.0
READER_CLIP = 10.0
"""The answer reader's margin (``reader.AnswerReader.margins``) is clipped to -10: an answer the reader
ranks that far below its own choice is simply not the answer, and one outlier must not dominate the
logistic layer."""


@dataclass(frozen=True, slots=True)
class ChunkUnits:
    """A chunk cut into units the claims are compared with, and their embeddings."""

    text: str
    units: tuple[str, ...]
    vectors: Vectors


@dataclass(frozen=True, slots=True)
class LexicalUnits:
    """A chunk cut into units the claims are read around, and each unit's content words."""

    text: str
    units: tuple[str, ...]
    words: tuple[frozenset[str], ...]


ON_TOPIC_COVERAGE = 0.5
"""Share of a claim's content words its best unit (with its neighbours) must hold for the chunk to be on
the claim's topic, and so able to CONTRADICT it (set by design: a conflicting number in a sentence about
something else is no contradiction)."""


@dataclass(frozen=True, slots=True)
class Grounding:
    """The model's reading of one claim against one chunk."""

    probability: float
    verdict: Verdict
    best_unit: str
    features: tuple[float, ...]


def chunk_units(chunk: str) -> list[str]:
    """The sentences of the chunk (the chunk itself when it has none)."""
    return text.split_sentences(chunk) or [chunk]


MAX_UNITS_PER_CHUNK = 64
"""Sentences of one chunk that are read as candidate best units (``lexical_units``) or embedded
(``prepare_chunks``, for ``rate_chunks``) at most. A longer chunk (a 60 KB chunk has hundreds) keeps the
ones sharing the most content words with the claims (or the query), in their order; the lexical
evidence still reads the whole chunk."""


def prepare_chunks(
    embedder: Embedder, chunks: Sequence[str], *, extra: Sequence[str] = (), focus: Sequence[str] = ()
) -> list[ChunkUnits]:
    """Cut every chunk into units and embed all units in one batch, ``extra`` texts first (their
    vectors are ``embedder``'s cache hits afterwards: one model run serves claims and chunks).

    A chunk of more than ``MAX_UNITS_PER_CHUNK`` units keeps those closest in words to ``focus``
    (default: ``extra``)."""
    focus_words = set().union(*(text.content_words(f) for f in (focus or extra)))
    per_chunk = [_bounded(chunk_units(c), focus_words) for c in chunks]
    flat = [u for units in per_chunk for u in units]
    vectors = embedder.embed([*extra, *flat])[len(extra) :]
    out: list[ChunkUnits] = []
    start = 0
    for chunk, units in zip(chunks, per_chunk, strict=True):
        out.append(ChunkUnits(chunk, tuple(units), vectors[start : start + len(units)]))
        start += len(units)
    return out


def _bounded(units: list[str], focus_words: set[str]) -> list[str]:
    if len(units) <= MAX_UNITS_PER_CHUNK:
        return units
    overlap = [len(text.content_words(u) & focus_words) for u in units]
    ranked = sorted(range(len(units)), key=lambda i: (-overlap[i], i))[:MAX_UNITS_PER_CHUNK]
    return [units[i] for i in sorted(ranked)]


def features(
    claim: str,
    chunk: LexicalUnits,
    model_logit: float,
    facts: text.ContextFacts | None = None,
    tokens: PassageTokens | None = None,
    reader_margin: float = math.nan,
) -> tuple[tuple[float, ...], str]:
    """The feature vector of ``claim`` against ``chunk`` (order of ``FEATURES``) and the best unit;
    ``model_logit``: the support model's reading of the pair (``SupportModel.support``, NaN when it
    does not read the claim), combined with the alignment into the ``model_support`` feature
    (``aligned.aligned_logit``); ``reader_margin``: the answer reader's margin for a bare answer
    (``reader.AnswerReader.margins``; NaN for any other claim and where the chunk does not state the
    answer), clipped to ``-READER_CLIP`` as ``answer_reading``; ``tokens``: the chunk's
    ``alignment.passage_tokens``, when the caller has read them already; ``facts``: the chunk's
    ``text.context_facts``, when the caller has read them already.

    The best unit is the sentence sharing the most content words with the claim (the earlier on ties):
    the word evidence is read around it. Picking it by embedding cosine cost two thirds of a QA
    record's time (14.6 ms of about 21) once the support model carried the meaning."""
    wanted = text.content_words(text.claim_focus(claim)) | text.content_words(claim)
    best = max(range(len(chunk.units)), key=lambda i: (len(chunk.words[i] & wanted), -i))
    best_unit = chunk.units[best]
    # The sentences beside the best one often carry its facts behind a pronoun ("It was completed
    # in 1889"), so local evidence is read in that window.
    window = " ".join(chunk.units[max(0, best - 1) : best + 2])
    focus = text.claim_focus(claim)
    whole = text.lexical_evidence(focus, chunk.text if facts is None else facts)
    local = text.lexical_evidence(focus, window)
    placed = alignment(claim, passage_tokens(chunk.text) if tokens is None else tokens)
    support = aligned.aligned_logit(model_logit, placed, whole.coverage, focus != claim)
    negation_mismatch = float(text.has_negation(focus) != text.has_negation(best_unit))
    values = (
        whole.coverage,
        min(float(whole.missing_words), _MAX_MISSING_WORDS),
        local.coverage,
        min(float(whole.missing_entities), _CAP),
        min(float(whole.missing_numbers), _CAP),
        min(float(local.conflicting_numbers + local.conflicting_months), _CAP),
        negation_mismatch,
        # Clipped again after the shift, as the model's own logit is (``aligned.MAX_LOGIT``): a shifted
        # logit beyond it says nothing more to the logistic layer.
        aligned.clip(support),
        placed.order,
        reader_margin if math.isnan(reader_margin) else max(reader_margin, -READER_CLIP),
    )
    return values, best_unit


def support_probability(values: Sequence[float]) -> float:
    """The calibrated probability that the chunk supports the claim (a NaN feature, one the models
    could not read, counts as its mean: no push either way)."""
    z = cal.GROUNDING_BIAS + sum(
        w * (v - m) / s
        for w, v, m, s in zip(cal.GROUNDING_WEIGHTS, values, cal.FEATURE_MEANS, cal.FEATURE_SCALES, strict=True)
        if not math.isnan(v)
    )
    return 1.0 / (1.0 + math.exp(-z))


def bare_answer_named(
    claim: str, values: Sequence[float], min_logit: float | None = None, min_margin: float | None = None
) -> bool | None:
    """For a bare answer joined to its question: does the chunk name it, as the answer? ``None`` for
    other claims.

    A bare answer ("Delhi", "6.213 km") has nothing to paraphrase, so it is supported only when the
    chunk contains every content word and every number of it, and both models read it as the answer to
    the question: the support model's logit at least ``min_logit`` (default the fitted
    ``MODEL_ANSWER_MIN_LOGIT``) and the answer reader's margin at least ``min_margin`` (default the
    fitted ``READER_MIN_MARGIN``); a model that does not read the claim (NaN) leaves the decision to the
    others. Any other span of the passage is named by it too, and only reading the question tells them
    apart: the support model reads the claim beside the passage, the reader has the passage's spans
    compete for the question (a year of the passage for a question about another of its years). A name
    given in part by the chunk ("Howard Marks" for "Dennis Howard Marks") is not supported: accepting
    half the words would also accept "Taj Hotels" wherever a hotel is mentioned. The word part of
    the rule is set by design, not fitted (in HaluEval QA nearly every right answer is bare and nearly
    every hallucinated one a sentence, so anything fitted per form would learn the form); only the
    models' cuts are fitted. "Yes" and "No" answers, and bare answers without content words, are left
    to the logistic layer (``claim_focus``).
    """
    focus = text.claim_focus(claim)
    if not claim.endswith(focus) or focus == claim or not text.content_words(focus):
        return None
    coverage = values[FEATURES.index("coverage")]
    cut = cal.MODEL_ANSWER_MIN_LOGIT if min_logit is None else min_logit
    margin_cut = cal.READER_MIN_MARGIN if min_margin is None else min_margin
    logit = values[FEATURES.index("model_support")]
    margin = values[FEATURES.index("answer_reading")]
    answers = (math.isnan(logit) or logit >= cut) and (math.isnan(margin) or margin >= margin_cut)
    return coverage >= 1.0 and values[FEATURES.index("missing_numbers")] == 0 and answers


def restated(values: Sequence[float]) -> bool:
    """Whether the chunk restates the claim in its own words: every content word and number of the
    claim is in its best sentence or the ones beside it, and none of them states another number, date
    or polarity.

    Such a claim is supported whatever the support model reads: the model was trained to tell which
    claim a passage supports, not to accept every restatement, and it rejects some plain ones ("The
    Eiffel Tower is in Paris." against a three-sentence passage on the tower: logit -2.9). Words in
    the chunk are evidence it may not overrule; a swapped relation between names the chunk does
    mention ("A beat B" for "B beat A") passes unless the claim is a near copy of the chunk out of the
    chunk's order (``alignment.Alignment.order`` from ``aligned.NEAR_COPY`` to below 1): two dates or names
    swapped inside one sentence are all in that sentence, a few pairs out of place, and are left to the
    probability; a rewording in another order ("The capital of Brazil is Brasilia." against "Brazil ...
    Its capital is Brasilia", order 0) is a restatement."""
    order = values[FEATURES.index("order")]
    return (
        not aligned.NEAR_COPY <= order < 1.0
        and values[FEATURES.index("best_unit_coverage")] >= 1.0
        and values[FEATURES.index("missing_numbers")] == 0
        and values[FEATURES.index("conflicts")] == 0
        and values[FEATURES.index("negation_mismatch")] == 0
    )


def conflicting(values: Sequence[float]) -> bool:
    """Whether the sentences the claim matches state another number, year or month than the claim
    ("World War I" against "World War II"). Such a claim is not supported whatever the support model
    reads: a conflicting number is evidence against it that the model may miss."""
    return values[FEATURES.index("conflicts")] > 0


def verdict_of(
    probability: float, values: Sequence[float], named: bool | None = None, substituted: bool = False
) -> Verdict:
    """SUPPORTED when a bare answer is named by the chunk (``named``; ``substituted`` is not read for one) or,
    for other claims without a ``conflicting`` number or a ``substituted`` name (``substitution``: a near copy
    of the chunk's sentence with another of its names or numbers in the place of the sentence's own), when the
    chunk restates it (``restated``) or at or above the fitted threshold; else CONTRADICTED on the claim's
    topic with a conflicting fact or a substitution, else NEITHER."""
    if named is None:
        against = conflicting(values) or substituted
        supported = not against and (probability >= cal.SUPPORT_THRESHOLD or restated(values))
    else:
        supported = named
    if supported:
        return Verdict.SUPPORTED
    conflicts, negation_mismatch = values[FEATURES.index("conflicts")], values[FEATURES.index("negation_mismatch")]
    on_topic = values[FEATURES.index("best_unit_coverage")] >= ON_TOPIC_COVERAGE
    if on_topic and (conflicts > 0 or negation_mismatch > 0 or (substituted and named is None)):
        return Verdict.CONTRADICTED
    return Verdict.NEITHER


def lexical_units(chunks: Sequence[str], claims: Sequence[str]) -> list[LexicalUnits]:
    """Every chunk cut into units with their content words; a chunk of more than
    ``MAX_UNITS_PER_CHUNK`` units keeps those closest in words to the claims."""
    focus_words = set().union(*(text.content_words(c) for c in claims))
    out: list[LexicalUnits] = []
    for chunk in chunks:
        units = tuple(_bounded(chunk_units(chunk), focus_words))
        out.append(LexicalUnits(chunk, units, tuple(text.content_words(u) for u in units)))
    return out


def read_answers(reader: AnswerReader | None, claims: Sequence[str], chunks: Sequence[str]) -> np.ndarray:
    """The answer reader's margin of every bare answer joined to its question against every chunk,
    ``[claim, chunk]``: NaN for other claims (sentences, yes/no answers, a claim the models do not
    ``reads``), for an answer a chunk does not state, and everywhere without a ``reader``.

    Only a short answer (``text.is_short_answer``) is read, where ``bare_answer_named`` takes any answer
    joined to its question: the OpenAI judge joins every sentence of an answer to its question, and a
    sentence copied from the passage would be ranked against the passage's short spans and lose."""
    out = np.full((len(claims), len(chunks)), np.nan)
    if reader is None:
        return out
    asked: list[tuple[int, int]] = []
    items: list[tuple[str, str, str]] = []
    for i, claim in enumerate(claims):
        parts = split_answer_claim(claim)
        if parts is None or text.claim_focus(claim) != parts[1] or not text.is_short_answer(parts[1]):
            continue
        if not reads(claim):
            continue
        # The question gets its mark back: the reader was trained on questions that end with one (without
        # it the judge read the calibration split's length-controlled set at 0.953 and same-kind spans at
        # 0.916, with it 0.960 and 0.928, each with the calibration refitted).
        question = f"{parts[0]}?"
        for j, chunk in enumerate(chunks):
            asked.append((i, j))
            items.append((question, parts[1], chunk))
    for (i, j), margin in zip(asked, reader.margins(items), strict=True):
        out[i, j] = margin
    return out


def feature_matrix(
    support: SupportModel, claims: Sequence[str], chunks: Sequence[str], reader: AnswerReader | None = None
) -> list[list[tuple[tuple[float, ...], str]]]:
    """Features and best unit of every claim against every chunk, ``[claim][chunk]``, with no
    calibration constants involved (the calibration fits on these); one support-model run in all, and
    one answer-reader run per bare answer and chunk window stating it (none without a ``reader``)."""
    if not claims or not chunks:
        return [[] for _ in claims]
    prepared = lexical_units(chunks, claims)
    logits = support.support(claims, chunks)
    margins = read_answers(reader, claims, chunks)
    # Each chunk's words are read once for all the claims (a long chunk is not cached across records).
    facts = [text.context_facts(chunk.text) for chunk in prepared]
    tokens = [passage_tokens(chunk.text) for chunk in prepared]
    rows: list[list[tuple[tuple[float, ...], str]]] = []
    for i, claim in enumerate(claims):
        check_stop()
        rows.append(
            [
                features(claim, chunk, float(logits[i, j]), f, t, float(margins[i, j]))
                for j, (chunk, f, t) in enumerate(zip(prepared, facts, tokens, strict=True))
            ]
        )
    return rows


def ground(
    support: SupportModel, claims: Sequence[str], chunks: Sequence[str], reader: AnswerReader | None = None
) -> list[list[Grounding]]:
    """Read every claim against every chunk: ``result[claim][chunk]``."""
    result: list[list[Grounding]] = []
    chunk_words = [substitution.words_of(chunk) for chunk in chunks] if claims else []
    for claim, row in zip(claims, feature_matrix(support, claims, chunks, reader), strict=True):
        readings: list[Grounding] = []
        for (values, best_unit), words in zip(row, chunk_words, strict=True):
            p = support_probability(values)
            named = bare_answer_named(claim, values)
            # A bare answer has no sentence to copy; its own rule reads it (``bare_answer_named``).
            swapped = named is None and substitution.substitution(claim, best_unit, words) is not None
            readings.append(Grounding(p, verdict_of(p, values, named, swapped), best_unit, values))
        result.append(readings)
    return result
