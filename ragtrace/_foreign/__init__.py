"""Scoring the RAG calls other instrumentations traced: OpenInference (LangChain, LlamaIndex), OpenLLMetry and
the OpenTelemetry GenAI conventions, with nothing changed in the app.

The scoring processor hands every ended span that is not ragtrace's own RAG span to a ``Joiner``
(``_joiner.py``), which gathers each RAG call's documents bottom-up as its spans end and gives back, per
span, a ``Release``: forward it untouched, or it is a RAG root (with its ``RagRecord``, or the reason it
cannot be scored). The parts, one job each:

* ``_classify``: which part of a RAG call a span is (root, retrieval, generation) by whose conventions;
  ``_openinference``, ``_openllmetry``, ``_genai``: what each shape's spans say; ``_documents`` and
  ``_json``: reading flattened documents and JSON values;
* ``_pending`` (what ended spans gather for their parent) and ``_state`` (per trace, bounded in count,
  bytes and time, with what was dropped counted);
* ``_assemble``: the record of a root, or ``no_content`` when the instrumentation kept the text off;
* ``_settings``: the joiner's settings and variables, and the instrumentations' privacy switches;
* ``_parts``: the frozen values passed between them;
* ``_whole``: the same RAG calls found in a whole trace at once (``join_trace`` over ``SpanView``s), for the
  collector, which has every span of a trace once it settled.
"""

from __future__ import annotations

from ragtrace._foreign._join_settings import VARIABLES, JoinSettings
from ragtrace._foreign._joiner import Joiner, JoinStats
from ragtrace._foreign._parts import Release
from ragtrace._foreign._whole import Joined, SpanView, join_trace

__all__ = ["VARIABLES", "JoinSettings", "JoinStats", "Joined", "Joiner", "Release", "SpanView", "join_trace"]
