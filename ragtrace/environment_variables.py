"""Every ``RAGTRACE_*`` environment variable, documented and parsed in one place.

Each variable has a constant here whose docstring says its meaning, type and default; constructor
arguments win over variables, variables win over defaults. The ``read_*`` helpers parse a variable;
a wrong value follows OpenTelemetry's convention for environment variables: one WARNING on the
``ragtrace`` logger naming the variable and the fix, then the default (``invalid``), so a typo in a
deployment never stops the app. A wrong *argument* in code raises ``ConfigurationError`` at once.

Standard OpenTelemetry variables (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_EXPORTER_OTLP_*``) are honoured by the OpenTelemetry SDK itself and are not repeated here.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Final, TypeVar

# Defined in ragtrace._exceptions with every ragtrace exception; importable from here as it always was.
from ragtrace._exceptions import ConfigurationError as ConfigurationError

_T = TypeVar("_T")

# -- Capture -----------------------------------------------------------------------------------------

RAGTRACE_CAPTURE_CONTENT: Final = "RAGTRACE_CAPTURE_CONTENT"
"""``true`` (default) or ``false``. When false, no query, chunk or answer text is exported on spans;
scoring still sees the text in memory. Same as ``configure(capture_content=...)``."""

RAGTRACE_MAX_ATTRIBUTE_LENGTH: Final = "RAGTRACE_MAX_ATTRIBUTE_LENGTH"
"""Integer, characters (default 8192). Exported text attributes (each chunk, query, answer) are cut
at this length and marked with ``semconv.TRUNCATION_MARKER``."""

RAGTRACE_MAX_RECORD_CHUNK_LENGTH: Final = "RAGTRACE_MAX_RECORD_CHUNK_LENGTH"
"""Integer, characters (default 65536). Each chunk kept in memory for scoring is cut at this length."""

RAGTRACE_MAX_RECORD_CHUNKS: Final = "RAGTRACE_MAX_RECORD_CHUNKS"
"""Integer (default 256). At most this many chunks of a RAG call are kept for scoring and exported."""

# -- Sampling and scoring ----------------------------------------------------------------------------

RAGTRACE_SAMPLE_RATE: Final = "RAGTRACE_SAMPLE_RATE"
"""Float in [0, 1] (default 0.1): fraction of traces scored, decided deterministically by trace id."""

RAGTRACE_METRIC_RATES: Final = "RAGTRACE_METRIC_RATES"
"""Per-metric rates, e.g. ``faithfulness=0.5,context_relevance=0.1``. A trace selected at a low rate
gets every metric of a higher rate too (dense selection)."""

RAGTRACE_METRICS: Final = "RAGTRACE_METRICS"
"""Comma-separated metric names to score (default: the production suite: faithfulness,
hallucination, hallucinated_claim, answer_relevancy_embedding, context_relevance)."""

RAGTRACE_THROTTLE_PER_MINUTE: Final = "RAGTRACE_THROTTLE_PER_MINUTE"
"""Integer >= 0: at most this many records scored per minute (unset: no throttle)."""

RAGTRACE_BUDGET_TOKENS_PER_DAY: Final = "RAGTRACE_BUDGET_TOKENS_PER_DAY"
"""Integer >= 0: judge tokens (prompt + completion) per UTC day; past it, decision ``over_budget``."""

RAGTRACE_BUDGET_USD_PER_DAY: Final = "RAGTRACE_BUDGET_USD_PER_DAY"
"""Float >= 0: judge spend in US dollars per UTC day, priced by the model price table."""

RAGTRACE_QUEUE_SIZE: Final = "RAGTRACE_QUEUE_SIZE"
"""Integer >= 1 (default 2048): records waiting to be scored; past it, decision ``overflow``."""

RAGTRACE_MAX_CONCURRENCY: Final = "RAGTRACE_MAX_CONCURRENCY"
"""Integer >= 1 (default 8): records scored at once by the background worker."""

RAGTRACE_HOLD_TIMEOUT: Final = "RAGTRACE_HOLD_TIMEOUT"
"""Finite float seconds > 0 (default 30): longest a RAG span is held for scoring before it is exported
unscored (decision ``timeout``); late scores then go out on a carrier span."""

RAGTRACE_SAMPLE_ALWAYS: Final = "RAGTRACE_SAMPLE_ALWAYS"
"""Comma-separated rules that force scoring whatever the rate: ``empty_answer``, ``partial_answer``,
``name:GLOB``, ``attr:KEY=VALUE`` (e.g. ``empty_answer,attr:user.feedback=bad``). Throttle and budget
still apply."""

RAGTRACE_SAMPLE_NEVER: Final = "RAGTRACE_SAMPLE_NEVER"
"""Comma-separated rules that prevent scoring (decision ``not_sampled``), same syntax as
``RAGTRACE_SAMPLE_ALWAYS``, e.g. ``name:*health*,attr:http.route=/healthz``."""

RAGTRACE_JUDGE_PRICES: Final = "RAGTRACE_JUDGE_PRICES"
"""Judge prices for the dollar budget, ``MODEL=IN/OUT`` in US dollars per million tokens, comma-separated,
e.g. ``my-model=0.2/0.8``; added to the built-in table of common OpenAI models."""

RAGTRACE_SHUTDOWN_TIMEOUT: Final = "RAGTRACE_SHUTDOWN_TIMEOUT"
"""Finite float seconds > 0 (default 30): time ``shutdown()`` (also at interpreter exit) may spend scoring the
records still queued before exporting the rest unscored."""

# -- Evaluation output -------------------------------------------------------------------------------

RAGTRACE_EVALUATION_SPAN_EVENTS: Final = "RAGTRACE_EVALUATION_SPAN_EVENTS"
"""``true`` (default) or ``false``: one ``gen_ai.evaluation.result`` span event per metric on the scored span.
The flat ``ragtrace.eval.*`` and OpenInference ``evaluations.*`` attributes are written either way."""

RAGTRACE_EVALUATION_LOGS: Final = "RAGTRACE_EVALUATION_LOGS"
"""``true`` or ``false`` (default): each ``gen_ai.evaluation.result`` also as an OpenTelemetry log record with
the scored span's trace and span id, to the global LoggerProvider (the app's OTLP log pipeline)."""

# -- Judge -------------------------------------------------------------------------------------------

RAGTRACE_JUDGE: Final = "RAGTRACE_JUDGE"
"""``auto`` (default), ``openai``, ``offline`` or ``tiered``. ``auto`` picks the OpenAI-compatible judge when
``OPENAI_API_KEY`` or ``RAGTRACE_JUDGE_BASE_URL`` is set, else the offline judge. ``tiered``: the offline
judge on every record, the OpenAI-compatible one on the doubtful ones (``ragtrace.judges.TieredJudge``)."""

RAGTRACE_JUDGE_BASE_URL: Final = "RAGTRACE_JUDGE_BASE_URL"
"""Base URL of an OpenAI-compatible endpoint (vLLM, Ollama, LiteLLM, Azure, ...), e.g.
``http://127.0.0.1:8000/v1``."""

RAGTRACE_JUDGE_API_KEY: Final = "RAGTRACE_JUDGE_API_KEY"
"""API key for the judge endpoint (falls back to ``OPENAI_API_KEY``)."""

RAGTRACE_JUDGE_MODEL: Final = "RAGTRACE_JUDGE_MODEL"
"""Chat model of the judge (default ``gpt-4o-mini``)."""

RAGTRACE_JUDGE_EMBEDDING_MODEL: Final = "RAGTRACE_JUDGE_EMBEDDING_MODEL"
"""Embeddings model of the judge (default ``text-embedding-3-small``)."""

RAGTRACE_JUDGE_TIMEOUT: Final = "RAGTRACE_JUDGE_TIMEOUT"
"""Float seconds > 0 (default 180, sized for a small model on a CPU): timeout of one judge call."""

RAGTRACE_JUDGE_SUPPORT_THRESHOLD: Final = "RAGTRACE_JUDGE_SUPPORT_THRESHOLD"
"""Number in [0, 1] (default 0.5): P(yes) from which the OpenAI-compatible judge's per-claim answer
counts as SUPPORTED. Small models lean to "no"; calibrate it per model on labelled rows
(``bench/local_llm_accuracy.py`` prints the cut that suits a model)."""

RAGTRACE_JUDGE_MAX_RETRIES: Final = "RAGTRACE_JUDGE_MAX_RETRIES"
"""Integer >= 0 (default 3): retries of a judge call on 408, 409, 429, 5xx, a 200 whose body is not
JSON, timeouts and connection errors."""

RAGTRACE_JUDGE_MAX_CONCURRENCY: Final = "RAGTRACE_JUDGE_MAX_CONCURRENCY"
"""Integer >= 1 (default 16): judge calls in flight at once."""

# -- Other instrumentations' RAG calls (read by ragtrace._foreign) -----------------------------------

RAGTRACE_RECOGNIZE: Final = "RAGTRACE_RECOGNIZE"
"""``true`` (default) or ``false``: score the RAG calls other instrumentations traced (OpenInference's
LangChain and LlamaIndex instrumentations, OpenLLMetry, the GenAI conventions). A value that does not parse
turns it off: recognising sends what those spans hold to the judge."""

RAGTRACE_RAG_ROOTS: Final = "RAGTRACE_RAG_ROOTS"
"""Comma-separated rules naming spans that are RAG roots, whatever their kind: ``name:GLOB`` or
``attr:KEY=VALUE`` (e.g. ``name:answer_question``). A rule that does not parse is left out."""

RAGTRACE_JOIN_MAX_TRACES: Final = "RAGTRACE_JOIN_MAX_TRACES"
"""Integer >= 1 (default 1024): traces whose RAG calls are being gathered at once; past it the oldest is
dropped (its RAG call goes unscored) and counted."""

RAGTRACE_JOIN_MAX_BYTES: Final = "RAGTRACE_JOIN_MAX_BYTES"
"""Integer >= 1 (default 67108864, 64 MiB): approximate bytes of documents and held spans gathered at once;
past it the oldest traces are dropped and counted."""

RAGTRACE_JOIN_MAX_SECONDS: Final = "RAGTRACE_JOIN_MAX_SECONDS"
"""Finite float seconds > 0 (default 300): longest a trace's gathering is kept; an older one is dropped
(checked as spans end) and counted."""

# -- Collector (read by ragtrace-collector, documented here so every RAGTRACE_* name lives in one place) ----

RAGTRACE_COLLECTOR_TOKEN: Final = "RAGTRACE_COLLECTOR_TOKEN"
"""Bearer token ``ragtrace-collector serve`` requires from senders (same as ``--token``); unset: none,
which is only allowed on a loopback address unless ``--insecure`` is given."""
RAGTRACE_COLLECTOR_INGEST_TOKEN: Final = "RAGTRACE_COLLECTOR_INGEST_TOKEN"
"""The senders' token alone (OTLP HTTP and gRPC; same as ``--ingest-token-file``'s content); unset: the one
token of ``--token``/``RAGTRACE_COLLECTOR_TOKEN``."""
RAGTRACE_COLLECTOR_ADMIN_TOKEN: Final = "RAGTRACE_COLLECTOR_ADMIN_TOKEN"
"""The token of people and the API alone (the pages' sign-in, ``/api/...``, ``/metrics``; same as
``--admin-token-file``'s content); unset: the one token of ``--token``/``RAGTRACE_COLLECTOR_TOKEN``."""
RAGTRACE_COLLECTOR_USERS_FILE: Final = "RAGTRACE_COLLECTOR_USERS_FILE"
"""The collector's users file (``serve --users-file``): people who sign in to the pages by name and password, one
``NAME:HASH`` a line (``ragtrace-collector users add``); unset: the admin token signs in."""
RAGTRACE_COLLECTOR_TRACE_URL: Final = "RAGTRACE_COLLECTOR_TRACE_URL"
"""URL template with ``{trace_id}`` (and ``{span_id}``) the record view links a trace to; unset: no link."""
RAGTRACE_PHOENIX_URL: Final = "RAGTRACE_PHOENIX_URL"
"""Phoenix's base URL (``--phoenix-url``): the collector posts its scores there as span annotations; unset: off."""
RAGTRACE_PHOENIX_API_KEY: Final = "RAGTRACE_PHOENIX_API_KEY"
"""Phoenix API key, sent as ``Authorization: Bearer``; only from the environment, so it never shows in ``ps``."""

# -- Parsing -----------------------------------------------------------------------------------------

_log = logging.getLogger("ragtrace")
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def invalid(name: str, value: object, problem: str, default: _T, *, instead: str | None = None) -> _T:
    """``default``, after one WARNING that ``name=value`` is invalid (``problem`` says why and how to fix it;
    ``instead`` what happens now, by default "using the default (...)").

    OpenTelemetry's convention for environment variables: a bad value is reported and a default used,
    so a typo in a deployment's environment never stops the app. (A bad *argument* in code still raises
    ``ConfigurationError``.) Where a variable guards privacy or spending, the value used is the safe one,
    not the usual default (``RAGTRACE_CAPTURE_CONTENT`` -> off, a budget -> 0, ``RAGTRACE_JUDGE`` ->
    offline). Each variable and value is reported once per process.
    """
    with _warned_lock:
        first = (name, str(value)) not in _warned
        _warned.add((name, str(value)))
    if first:
        then = instead or f"using the default ({default})"
        _log.warning("ragtrace: %s=%r is invalid: %s; %s", name, value, problem, then)
    return default


def safe_fallback(value: object) -> str:
    """What ``invalid`` says when a variable that guards privacy or spending falls back to its safe value
    rather than to its default: "falling back to the safe value (off)"."""
    shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
    return f"falling back to the safe value ({shown})"


def _instead(default: object, fallback: object) -> str | None:
    # None: the default is used, and ``invalid`` says so; else the safe value differs from it and is named.
    return None if fallback is None or fallback == default else safe_fallback(fallback)


def read_str(name: str, default: str | None = None) -> str | None:
    """The variable's value, stripped, or ``default`` when unset or empty."""
    value = _raw(name)
    return default if value is None else value


def read_bool(name: str, default: bool, *, fallback: bool | None = None) -> bool:
    """Parse ``true/false/1/0/yes/no/on/off`` (any case); otherwise warn and return ``fallback`` (the safe
    value, when it differs from ``default``; the warning then says "falling back to the safe value (off)")
    or ``default`` (the warning says "using the default (...)")."""
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    used = default if fallback is None else fallback
    return invalid(name, value, "not a boolean: set it to 'true' or 'false'", used, instead=_instead(default, fallback))


def read_int(name: str, default: int | None, *, minimum: int = 0, fallback: int | None = None) -> int | None:
    """Parse an integer >= ``minimum``; otherwise warn (naming the fix and the value used) and return
    ``fallback`` (the safe value) if given, else ``default``."""
    value = _raw(name)
    if value is None:
        return default
    used, said = (default if fallback is None else fallback), _instead(default, fallback)
    try:
        parsed = int(value)
    except ValueError:
        return invalid(name, value, "not an integer: set it to a whole number", used, instead=said)
    if parsed < minimum:
        return invalid(name, value, f"below {minimum}: set it to {minimum} or more", used, instead=said)
    return parsed


def read_float(
    name: str,
    default: float | None,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    fallback: float | None = None,
) -> float | None:
    """Parse a float within [``minimum``, ``maximum``]; otherwise warn (naming the fix and the value used)
    and return ``fallback`` (the safe value) if given, else ``default``."""
    value = _raw(name)
    if value is None:
        return default
    used, said = (default if fallback is None else fallback), _instead(default, fallback)
    try:
        parsed = float(value)
    except ValueError:
        return invalid(name, value, "not a number: set it to e.g. 0.5", used, instead=said)
    if parsed != parsed or (minimum is not None and parsed < minimum) or (maximum is not None and parsed > maximum):
        low = "-inf" if minimum is None else minimum
        high = "inf" if maximum is None else maximum
        return invalid(name, value, f"out of range: set it between {low} and {high}", used, instead=said)
    return parsed


def read_mapping(name: str) -> dict[str, str]:
    """Parse ``key=value,key=value``; an item without ``=`` is left out, with a warning."""
    value = _raw(name)
    if value is None:
        return {}
    result: dict[str, str] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            invalid(name, item, "not 'name=value' (write e.g. faithfulness=0.5)", None, instead="the item is left out")
            continue
        result[key.strip()] = val.strip()
    return result


def read_list(name: str) -> list[str] | None:
    """Parse a comma-separated list; ``None`` when unset."""
    value = _raw(name)
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]
