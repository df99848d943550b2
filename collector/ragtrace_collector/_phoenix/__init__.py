"""Scores as Arize Phoenix span annotations: the collector posts every score it stores to Phoenix's REST API.

Opt-in with ``ragtrace-collector serve --phoenix-url http://127.0.0.1:6006`` (or ``RAGTRACE_PHOENIX_URL``; an API
key from ``RAGTRACE_PHOENIX_API_KEY``). One annotation per measured metric on the RAG span, where Phoenix users
look for evaluations: name = metric, score, label, explanation, annotator kind LLM, metadata (judge, source,
ragtrace version). The spans reach Phoenix on their own way (the app's exporter, or ``--forward``).

The parts: ``_wire.py`` (Phoenix's API: URL, bodies, replies), ``_cursor.py`` (how far it delivered, kept in
the store's file so a restart resumes there); the store's ``_store.phoenix`` reads the scores committed after a
cursor and keeps the cursor's row;
``_annotator.py`` (``PhoenixAnnotator``: batching, retries, waiting for spans, counting).
"""

from __future__ import annotations

from ragtrace_collector._phoenix._annotator import PhoenixAnnotator
from ragtrace_collector._phoenix._wire import (
    PHOENIX_API_KEY_VARIABLE,
    PHOENIX_URL_VARIABLE,
    Annotation,
    annotations_url,
)

__all__ = ["PHOENIX_API_KEY_VARIABLE", "PHOENIX_URL_VARIABLE", "Annotation", "PhoenixAnnotator", "annotations_url"]
