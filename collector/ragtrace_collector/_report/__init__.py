"""Reports over the store: ``summary()``, ``problems()``, ``report()`` (markdown or HTML) and the live page.

Everything here reads the store through SQL over the agreed schema (``spans``, ``rag_records``,
``scores``, ``alerts``); a store whose tables do not exist yet reads as empty. A *source* is a path to
the SQLite file, a ``sqlite_utils.Database``, or an object with ``path`` (the collector's ``Store``).

Definitions (docs/metric-contract.md, "Reports over many records"):

* a record's *overall* score is the mean of its measured metrics, each turned "higher is better"
  (``1 - value`` for hallucination-like metrics), so one number ranks records whatever the suite;
* a *problem* is a record with any metric on the wrong side of ``threshold`` (below it for
  higher-is-better metrics, above ``1 - threshold`` for lower-is-better ones), worst overall first,
  each with its issues listed.

The HTML page is self-contained: plotly.js is inlined once, so it renders offline with no CDN.

The parts: ``_queries.py`` (SQL), ``_model.py`` (what the queries return), ``_markdown.py`` and ``_html.py``
(rendering, with ``_format.py``), ``_page.py`` (``report``, ``write_report`` and the live page).
"""

from __future__ import annotations

from ragtrace_collector._report._format import Format
from ragtrace_collector._report._page import page_routes, report, write_report
from ragtrace_collector._store.report import problems, summary
from ragtrace_collector._store.summaries import Issue, MetricSummary, Problem, Summary

__all__ = [
    "Format",
    "Issue",
    "MetricSummary",
    "Problem",
    "Summary",
    "page_routes",
    "problems",
    "report",
    "summary",
    "write_report",
]
