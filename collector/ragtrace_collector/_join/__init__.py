"""Joining the RAG calls other instrumentations traced, server-side: spans of one trace arrive in several
exports, out of order; once the trace has settled its RAG calls are found, stored and scored.

* ``_limits``: ``JoinLimits``, the settle window and the bounds on the traces waiting;
* ``_settler``: ``Settler``, which looks at the waiting traces, joins the settled ones and hands their
  records to server-side scoring;
* ``_queries``: its reads of the store; ``_views``: stored spans as ragtrace's ``SpanView``, joined calls as
  ``rag_records`` rows.

The decoder marks the spans that may be part of such a call (``Batch.pending``); the store keeps their
traces in ``join_pending`` in the same transaction as the spans, so an acknowledged export is never lost
to a restart.
"""

from __future__ import annotations

from ragtrace_collector._join._limits import JoinLimits
from ragtrace_collector._join._settler import JoinStats, Settler

__all__ = ["JoinLimits", "JoinStats", "Settler"]
