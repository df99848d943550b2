"""Phoenix's span-annotation API as the annotator speaks it: the URL, one annotation's body, and Phoenix's replies.

``POST /v1/span_annotations?sync=true`` with ``{"data": [{span_id, name, annotator_kind, result: {score, label,
explanation}, metadata, identifier}]}`` (Phoenix 20.x, ``phoenix/server/api/routers/v1/spans.py``). Synchronous
on purpose: without ``sync`` Phoenix answers 200 at once and, when a span is not stored yet, retries in its own
memory for up to ten minutes and then drops the annotation silently; with it, Phoenix checks every span first and
answers 404 ``Spans with IDs a, b do not exist.`` having written nothing, so the annotator knows what landed,
waits for the missing spans itself and counts what it gives up.

Phoenix upserts on (span, name, identifier): an annotation sent twice (a retry after a lost reply) replaces
itself, never duplicates. The identifier ``ragtrace`` keeps ragtrace's annotation of a metric apart from one a
person adds in the UI under the same name (identifier ``""``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ragtrace import __version__ as ragtrace_version
from ragtrace import environment_variables as env
from ragtrace_collector._address import endpoint_url
from ragtrace_collector._store.arrival import Arrival

__all__ = [
    "ANNOTATIONS_PATH",
    "ANNOTATOR_KIND",
    "IDENTIFIER",
    "PHOENIX_API_KEY_VARIABLE",
    "PHOENIX_URL_VARIABLE",
    "Annotation",
    "Delivery",
    "Reply",
    "annotations_url",
    "classify",
    "request_body",
]

PHOENIX_URL_VARIABLE = env.RAGTRACE_PHOENIX_URL
PHOENIX_API_KEY_VARIABLE = env.RAGTRACE_PHOENIX_API_KEY

ANNOTATIONS_PATH = "/v1/span_annotations"
IDENTIFIER = "ragtrace"
"""Every annotation's ``identifier``: Phoenix's upsert key is (span, name, identifier)."""
ANNOTATOR_KIND = "LLM"
"""Phoenix's kinds are LLM, CODE and HUMAN: a judge model produced the score."""

_RETRYABLE = frozenset({408, 429})  # and every 5xx
_MISSING = re.compile(r"Spans with IDs (.+?) do not exist")


def annotations_url(url: str) -> str:
    """The annotation endpoint for ``--phoenix-url``: a base URL gets ``/v1/span_annotations`` appended.

    Raises ``ConfigurationError`` when the URL is not http(s).
    """
    problem = f"--phoenix-url {url!r} is not Phoenix's URL: give its base URL, e.g. http://127.0.0.1:6006"
    return endpoint_url(url, ANNOTATIONS_PATH, problem).rstrip("/")


@dataclass(frozen=True, slots=True)
class Annotation:
    """One metric's score on one span, as Phoenix shows it: name = metric, result = score, label, explanation.

    ``judge`` (the judge's name) and ``source`` (``app``, ``carrier``, ``collector``, ``log``: who scored) go in
    the metadata when known, with the ragtrace version of the collector that sent it. ``row`` is the place in
    ``scores`` it was read from (``Arrival``; not sent): the stored cursor stays below it until it is delivered
    or given up.
    """

    span_id: str
    name: str
    score: float
    row: Arrival
    label: str | None = None
    explanation: str | None = None
    judge: str | None = None
    source: str | None = None

    def wire(self) -> dict[str, Any]:
        """The annotation as an item of the request's ``data`` list."""
        result: dict[str, Any] = {"score": self.score}
        if self.label is not None:
            result["label"] = self.label
        if self.explanation is not None:
            result["explanation"] = self.explanation
        metadata = {"ragtrace_version": ragtrace_version}
        if self.judge is not None:
            metadata["judge"] = self.judge
        if self.source is not None:
            metadata["source"] = self.source
        return {
            "span_id": self.span_id,
            "name": self.name,
            "annotator_kind": ANNOTATOR_KIND,
            "identifier": IDENTIFIER,
            "result": result,
            "metadata": metadata,
        }


def request_body(annotations: list[Annotation]) -> dict[str, Any]:
    """The JSON body of one ``POST /v1/span_annotations``."""
    return {"data": [annotation.wire() for annotation in annotations]}


class Delivery(Enum):
    """What to do with a posted batch after Phoenix's reply."""

    SENT = "sent"
    MISSING = "missing"
    """Some spans are not in Phoenix (yet): nothing was written; wait for those, send the rest again now."""
    RETRY = "retry"
    """A transient failure (5xx, 408, 429, no connection): send the same batch again after a pause."""
    REFUSED = "refused"
    """Phoenix will never take this batch (400, 401, 403, 422, ...): give it up."""


@dataclass(frozen=True, slots=True)
class Reply:
    """Phoenix's reply to one batch: the outcome, the spans it lacks (``MISSING``), and a reason for the log."""

    outcome: Delivery
    missing: frozenset[str] = frozenset()
    reason: str = ""


def classify(status: int, text: str, span_ids: frozenset[str]) -> Reply:
    """Read Phoenix's reply (``status``, body ``text``) to a batch of annotations on ``span_ids``.

    A 404 that names spans of the batch marks those missing; a 404 naming none of them (another Phoenix
    version's wording, a proxy's page) marks the whole batch missing, so it is retried until the span wait
    runs out rather than dropped at once.
    """
    if status < 300:
        return Reply(Delivery.SENT)
    reason = f"HTTP {status}: {_detail(text)[:200]}"
    if status == 404:
        named = _missing_ids(text) & span_ids
        return Reply(Delivery.MISSING, named or span_ids, reason)
    if status in _RETRYABLE or status >= 500:
        return Reply(Delivery.RETRY, reason=reason)
    return Reply(Delivery.REFUSED, reason=reason)


def _detail(text: str) -> str:
    """Phoenix answers errors as plain text; FastAPI's default, and proxies, as JSON ``{"detail": ...}``."""
    try:
        detail = json.loads(text).get("detail")
    except (ValueError, AttributeError):
        return text.strip()
    return str(detail) if detail is not None else text.strip()


def _missing_ids(text: str) -> frozenset[str]:
    found = _MISSING.search(_detail(text))
    if found is None:
        return frozenset()
    return frozenset(part.strip().lower() for part in found.group(1).split(","))
