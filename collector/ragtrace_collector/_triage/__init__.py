"""The triage pages of the live page: from an alert to the records that made it fire, to a record's
claims and the chunks that decided them (``triage_routes``), with the records list's filters in the URL."""

from ragtrace_collector._triage._filters import FilterError, RecordFilter, ScoreBound, parse_filter
from ragtrace_collector._triage._routes import TRACE_URL_VARIABLE, triage_routes

__all__ = ["TRACE_URL_VARIABLE", "FilterError", "RecordFilter", "ScoreBound", "parse_filter", "triage_routes"]
