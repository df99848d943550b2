"""Text evidence for the offline judge: the one import surface of its two text modules.

Everything the offline judge reads from text without a model is re-exported here, so the judge, its
grounding model, the benchmarks and the training scripts import it from one place
(``from ragtrace.judges.offline import text``):

* ``segment``: cutting text into units. Sentences (``split_sentences``, boundaries from
  ``pysbd``), clauses, an answer's claims (``extract_claims``) and a claim's focus (``claim_focus``),
  word tokens (``raw_words``, ``words``, ``stem``, ``content_words``) and evasive wording
  (``noncommittal_wording``), which is not a claim.
* ``facts``: reading facts out of text. Numbers, years, months, proper names and negation,
  and a claim's ``lexical_evidence`` against one context (``context_facts`` reads a context once): the
  evidence an embedding cannot see, a year, a number or a name that the context lacks or states
  otherwise.

``facts`` reads the units of ``segment``, never the other way round. Both are pure
and deterministic; what each reads from a text up to ``CACHED_TEXT_CHARS`` long is kept (``short_cache``:
``_cached_sentences`` and ``_cached_facts``, re-exported so that tests can clear and measure them).
"""

from __future__ import annotations

from ragtrace.judges._noncommittal import noncommittal_wording
from ragtrace.judges.offline.facts import (
    MONTHS,
    ContextFacts,
    Evidence,
    context_facts,
    entities,
    has_negation,
    lexical_evidence,
    months,
    numbers,
    years,
)
from ragtrace.judges.offline.facts import _cached_facts as _cached_facts
from ragtrace.judges.offline.segment import (
    CACHED_TEXT_CHARS,
    NEGATIONS,
    STOPWORDS,
    claim_focus,
    content_words,
    extract_claims,
    is_short_answer,
    raw_words,
    split_clauses,
    split_sentences,
    stem,
    words,
)
from ragtrace.judges.offline.segment import _cached_sentences as _cached_sentences

__all__ = [
    "CACHED_TEXT_CHARS",
    "MONTHS",
    "NEGATIONS",
    "STOPWORDS",
    "ContextFacts",
    "Evidence",
    "claim_focus",
    "content_words",
    "context_facts",
    "entities",
    "extract_claims",
    "has_negation",
    "is_short_answer",
    "lexical_evidence",
    "months",
    "noncommittal_wording",
    "numbers",
    "raw_words",
    "split_clauses",
    "split_sentences",
    "stem",
    "words",
    "years",
]
