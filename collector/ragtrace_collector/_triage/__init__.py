"""The triage pages of the live page: from an alert to the records that made it fire, to a record's
claims and the chunks that decided them (``triage_routes``), with the records list's filters and order in the URL.

The parts: ``_routes`` (the routes and the error pages), ``_templates`` (the Jinja2 templates of ``templates/``,
autoescaped: every page's frame, ``layout.html``, with the navigation and the scope picker, and every page),
``_layout`` (the error page, the SVG chart), ``_scope`` (the time range and service every page shares), ``_filters``
and ``_sorting`` (the list's filters, orders and cursors), ``_assets`` (the stylesheet and scripts of ``static/``
and plotly.js, at versioned cached URLs), ``_alert_panel`` (the alert controls the overview and an alert's page
share), and one module per page (``_list_html``, ``_record_html``, ``_trace_html``, ``_alert_html``, ``_costs``,
``_review_html``; ``_prices`` prices model calls; ``_time`` writes a time)."""

from ragtrace_collector._triage._filters import FilterError, RecordFilter, ScoreBound, parse_filter
from ragtrace_collector._triage._routes import TRACE_URL_VARIABLE, triage_routes

__all__ = ["TRACE_URL_VARIABLE", "FilterError", "RecordFilter", "ScoreBound", "parse_filter", "triage_routes"]
