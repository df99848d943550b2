"""OTLP/HTTP receiver: ``POST /v1/traces`` and ``POST /v1/logs`` (protobuf or JSON, optionally gzip), as a Starlette
app. A logs export stores the evaluations it carries (``gen_ai.evaluation.result`` records) as scores.

Replies follow the OTLP/HTTP specification:

* 200 with an ``ExportTraceServiceResponse`` (``ExportLogsServiceResponse``), in the request's encoding, once the
  rows are committed; when some spans (log records) were rejected, its ``partial_success`` says how many and why.
* 400 malformed body (not protobuf / not JSON / broken gzip): the sender must not retry.
* 401 missing or wrong bearer token, 413 body (or its decompressed size) over the limit, 415 unsupported
  content type or encoding.
* 429 with ``Retry-After`` when the bytes of every request in flight would pass the in-flight budget
  (``_budget.ByteBudget``): nothing was read into the store, the sender retries.
* 503 with ``Retry-After`` when the store could not commit: nothing was acknowledged, the sender retries.

Error bodies are a ``google.rpc.Status`` in the request's encoding. A sender that closes the connection before
its whole body arrived (an exporter's timeout, a crash) costs one WARNING line and nothing else: nothing of the
export is stored and there is no one to reply to.

The parts: ``_app.py`` (the routes and what each receiver does with a request), ``_logs.py`` (a logs export's
evaluations stored, and its reply; the gRPC receiver's too), ``_body.py`` (reading a request: token, content type,
encoding, the body within the size limit and the in-flight budget), ``_gzip.py`` (inflating a gzip body in bounded
chunks), ``_replies.py`` (``Reject`` and every reply, in the request's encoding; the trace and metrics replies
both receivers give), ``_token.py`` (the bearer token and the page's guard), ``_alert_api.py`` (the alert API:
list, acknowledge, silence; the page and the CLI use it), ``_review_api.py`` (people's reviews of records, their
export as labels, the judge's agreement with them).
"""

from __future__ import annotations

from ragtrace_collector._http._alert_api import ALERTS_API_PATH, SILENCES_API_PATH, alert_api_routes
from ragtrace_collector._http._app import METRICS_PATH, TRACES_PATH, create_app
from ragtrace_collector._http._body import DEFAULT_MAX_BODY_BYTES
from ragtrace_collector._http._logs import LOGS_PATH, accept_logs, logs_reply
from ragtrace_collector._http._replies import METRICS_NOT_STORED, metrics_not_stored, traces_reply
from ragtrace_collector._http._review_api import REVIEWS_API_PATH, review_api_routes
from ragtrace_collector._http._token import bearer_matches

__all__ = [
    "ALERTS_API_PATH",
    "DEFAULT_MAX_BODY_BYTES",
    "LOGS_PATH",
    "METRICS_NOT_STORED",
    "METRICS_PATH",
    "REVIEWS_API_PATH",
    "SILENCES_API_PATH",
    "TRACES_PATH",
    "accept_logs",
    "alert_api_routes",
    "bearer_matches",
    "create_app",
    "logs_reply",
    "metrics_not_stored",
    "review_api_routes",
    "traces_reply",
]
