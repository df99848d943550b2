"""Capture: everything between a decorated call and its span (and its record for scoring).

The contracts other modules code against are re-exported here:

* ``CaptureSettings`` and ``set_settings`` / ``get_settings`` (``_capture_settings.py``): what the decorators
  may export and how much they keep (privacy switch, redaction hook, size bounds).
* ``prepare_text`` then ``export_text`` (``_text.py``): the two functions every captured text goes
  through, so the export bound, the record bound and redaction are applied in one place.
* ``RECORDS`` (``_records.py``): the bounded hand-off of each ended RAG span's ``RagRecord`` to the
  scoring processor.
* ``set_tracer_provider`` / ``get_tracer`` (``_tracer.py``): which TracerProvider the decorators use,
  without touching the global one (``configure()`` and tests inject theirs here).

The decorators themselves are built from the rest: ``_spec.py`` (what one decoration says, checked
once), ``_state.py`` (the RAG call's shared state and ``record()``), ``_call.py`` (one call's span
from start to end), ``_attributes.py`` (what goes on the span and into the record) and
``_wrappers.py`` (one wrapper per kind of function); ``ragtrace._decorator`` holds the public
decorators. Modules that read the settings or the tracer call them through this package
(``_capture.get_settings()``), so a test can replace them in one place.
"""

from __future__ import annotations

from ragtrace._capture._capture_settings import CaptureSettings, get_settings, set_settings
from ragtrace._capture._records import RECORDS, RecordStore
from ragtrace._capture._text import REDACT_MARGIN, REDACTION_FAILED, export_text, prepare_text
from ragtrace._capture._tracer import get_tracer, get_tracer_provider, set_tracer_provider, tracer_from

__all__ = [
    "RECORDS",
    "REDACTION_FAILED",
    "REDACT_MARGIN",
    "CaptureSettings",
    "RecordStore",
    "export_text",
    "get_settings",
    "get_tracer",
    "get_tracer_provider",
    "prepare_text",
    "set_settings",
    "set_tracer_provider",
    "tracer_from",
]
