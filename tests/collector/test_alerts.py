"""The watcher over a real SQLite store, notifying a real webhook receiver on 127.0.0.1.

A hallucination spike raises ALERT on the webhook; an ALERT still firing is not repeated before the
renotify interval and is repeated after it; the all-clear sends a resolved message; a group that stops
getting scored records goes to NO_DATA; every transition is a row in ``alerts``.
"""

from __future__ import annotations

import io
import json
import logging
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from ragtrace_collector._alerts import Alert, LogSink, StdoutSink, Watcher, WebhookSink
from ragtrace_collector._otlp import Batch
from ragtrace_collector._rules import parse_rules
from ragtrace_collector._store.schema import SCORE_COLUMNS

from ragtrace.environment_variables import ConfigurationError
from tests.collector._spans import SpanFactory, otlp_bytes, start_collector
from tests.collector._stores import dict_rows, whole_row
from tests.collector._webhook import Receiver

NS = 1_000_000_000
NOW = 1_800_000_000 * NS
MINUTE = 60 * NS
HOUR = 60 * MINUTE


@pytest.fixture
def store(open_store: Callable[[], Any]) -> Any:
    """The store the watcher reads, on either engine (``open_store``'s parameter)."""
    return open_store()


@pytest.fixture
def watcher_of() -> Iterator[Callable[..., Watcher]]:
    """``watcher_of(target, ...)``: a ``Watcher``, stopped after the test (on PostgreSQL it holds the leader's
    session while it lives)."""
    made: list[Watcher] = []

    def make(*args: Any, **kwargs: Any) -> Watcher:
        made.append(Watcher(*args, **kwargs))
        return made[-1]

    yield make
    for watcher in made:
        watcher.stop()


def add_scores(
    store: Any, metric: str, values: list[float], *, start: int, end: int, service: str | None = "shop"
) -> None:
    """Insert one score per value, evenly spread over [start, end), for route /ask of ``service``."""
    step = (end - start) // max(len(values), 1)
    rows = [
        whole_row({
            "span_id": f"{service}-{metric}-{start + i * step:x}",
            "metric": metric,
            "value": value,
            "trace_id": f"{i:032x}",
            "service": service,
            "route": "/ask",
            "time_ns": start + i * step,
            "source": "app",
        }, SCORE_COLUMNS)
        for i, value in enumerate(values)
    ]  # fmt: skip
    store.write(Batch(scores=rows))


def pattern(n: int, every: int) -> list[float]:
    """``n`` hallucination scores, one in ``every`` hallucinated (0.9), the others grounded (0.2: claims
    weighed by support probability leave a grounded answer a little above 0)."""
    return [0.9 if i % every == 0 else 0.2 for i in range(n)]


SPIKE_RULES = """
interval = "1s"
renotify = "30m"

[[sinks]]
type = "webhook"
name = "hook"
url = "{url}"
retries = 0

[[rules]]
name = "hallucination-spike"
kind = "spike"
metric = "hallucination"
window = "1h"
baseline = "1d"
min_baseline = 200
min_records = 20
group_by = "service"
"""


def alert_rows(store: Any) -> list[dict[str, Any]]:
    return dict_rows(store, "SELECT * FROM alerts ORDER BY id")


def test_hallucination_spike_alerts_renotifies_resolves_and_goes_no_data(
    watcher_of: Callable[..., Watcher], store: Any, receiver: Receiver, tmp_path: Path
) -> None:
    rules_path = tmp_path / "rules.toml"
    rules_path.write_text(SPIKE_RULES.format(url=receiver.url), encoding="utf-8")
    # A day of history at 5 %, then the last hour at 25 %.
    add_scores(store, "hallucination", pattern(1000, 20), start=NOW - 25 * HOUR, end=NOW - HOUR)
    add_scores(store, "hallucination", pattern(200, 4), start=NOW - HOUR + 1, end=NOW)
    watcher = watcher_of(store.target, rules_path)
    try:
        (alert,) = watcher.evaluate_once(NOW)
        assert (alert.rule, alert.kind, alert.state, alert.previous_state) == (
            "hallucination-spike",
            "spike",
            "ALERT",
            None,
        )
        assert alert.service == "shop" and alert.route is None

        body = receiver.next()
        assert body["text"].startswith("*ALERT* hallucination-spike: hallucination [service=shop]")
        assert "vs baseline 5.0%" in body["text"]
        assert body["alert"]["state"] == "ALERT" and body["alert"]["value"] >= 8.0
        # One key an episode, in the body and the header, so a receiver that dedupes pages once for it.
        key = body["idempotency_key"]
        assert receiver.headers[-1]["Idempotency-Key"] == key and len(key) == 32

        (row,) = alert_rows(store)
        assert (row["rule"], row["state"], row["previous_state"], row["metric"]) == (
            "hallucination-spike",
            "ALERT",
            None,
            "hallucination",
        )
        assert json.loads(row["sinks"]) == ["hook"] and row["threshold"] == 8.0

        # Still firing a minute later: no repeat before the renotify interval.
        assert watcher.evaluate_once(NOW + MINUTE) == []
        # Past it: one reminder.
        (reminder,) = watcher.evaluate_once(NOW + 31 * MINUTE)
        assert (reminder.state, reminder.previous_state) == ("ALERT", "ALERT")
        reminder = receiver.next()
        assert "(still firing)" in reminder["text"] and reminder["idempotency_key"] == key

        # The spike leaves the window; the next hour is clean again: resolved.
        add_scores(store, "hallucination", pattern(200, 20), start=NOW + HOUR, end=NOW + 2 * HOUR)
        (resolved,) = watcher.evaluate_once(NOW + 2 * HOUR)
        assert (resolved.state, resolved.previous_state) == ("OK", "ALERT") and resolved.resolved
        resolved = receiver.next()
        assert resolved["text"].startswith("*RESOLVED* hallucination-spike") and resolved["idempotency_key"] != key

        # Nothing scored for a day: NO_DATA, not OK.
        (silent,) = watcher.evaluate_once(NOW + 30 * HOUR)
        assert (silent.state, silent.previous_state) == ("NO_DATA", "OK")
        assert "need 20" in silent.message
        assert receiver.next()["text"].startswith("*NO_DATA* hallucination-spike")

        assert [(r["state"], r["previous_state"]) for r in alert_rows(store)] == [
            ("ALERT", None),
            ("ALERT", "ALERT"),
            ("OK", "ALERT"),
            ("NO_DATA", "OK"),
        ]
    finally:
        watcher.stop()
    assert receiver.bodies.empty()


def test_only_the_spiking_service_alerts_and_states_survive_a_restart(
    watcher_of: Callable[..., Watcher], store: Any, tmp_path: Path
) -> None:
    rules = parse_rules(
        """
[[rules]]
name = "hallucination-spike"
kind = "spike"
metric = "hallucination"
window = "1h"
baseline = "1d"
"""
    )
    for service, every in (("shop", 4), ("docs", 20)):
        add_scores(store, "hallucination", pattern(1000, 20), start=NOW - 25 * HOUR, end=NOW - HOUR, service=service)
        add_scores(store, "hallucination", pattern(200, every), start=NOW - HOUR + 1, end=NOW, service=service)
    out = io.StringIO()
    watcher = watcher_of(store.target, rules=rules, sinks=[StdoutSink(stream=out)])
    alerts = {a.service: a for a in watcher.evaluate_once(NOW)}
    assert alerts["shop"].state == "ALERT"
    assert alerts["docs"].state == "OK"
    # The first sighting of a healthy group is recorded, not announced.
    assert out.getvalue().count("\n") == 1 and "service=shop" in out.getvalue()
    watcher.stop()

    again = watcher_of(store.target, rules=rules, sinks=[StdoutSink(stream=out)])
    assert again.evaluate_once(NOW + MINUTE) == []
    assert len(alert_rows(store)) == 2


def test_threshold_rule_with_the_log_sink(
    watcher_of: Callable[..., Watcher], store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    rules = parse_rules(
        """
[[rules]]
name = "faithfulness-low"
kind = "threshold"
metric = "faithfulness"
window = "15m"
threshold = 0.7
group_by = "route"
"""
    )
    add_scores(store, "faithfulness", [0.5] * 30, start=NOW - 10 * MINUTE, end=NOW)
    watcher = watcher_of(store.target, rules=rules)  # sinks from the rules: the default log sink
    with caplog.at_level(logging.INFO, logger="ragtrace_collector.alerts"):
        (alert,) = watcher.evaluate_once(NOW)
    assert (alert.state, alert.route, alert.service) == ("ALERT", "/ask", None)
    assert alert.value == pytest.approx(0.5)
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert "faithfulness-low: faithfulness [route=/ask]: mean 0.500 over 30 records is below 0.7" in caplog.text


def test_too_few_scored_records_is_no_data(watcher_of: Callable[..., Watcher], store: Any) -> None:
    rules = parse_rules(
        '[[rules]]\nname = "low"\nkind = "threshold"\nmetric = "faithfulness"\nthreshold = 0.7\nmin_records = 20\n'
    )
    add_scores(store, "faithfulness", [0.1] * 5, start=NOW - MINUTE, end=NOW)
    (alert,) = watcher_of(store.target, rules=rules, sinks=[]).evaluate_once(NOW)
    assert alert.state == "NO_DATA"
    assert alert_rows(store)[0]["state"] == "NO_DATA"


def test_an_empty_store_is_no_data_for_a_global_rule(watcher_of: Callable[..., Watcher], tmp_path: Path) -> None:
    rules = parse_rules(
        '[[rules]]\nname = "low"\nkind = "threshold"\nmetric = "faithfulness"\nthreshold = 0.7\ngroup_by = "all"\n'
    )
    db = tmp_path / "fresh.db"  # no schema yet: the collector may start the watcher before the first export
    (alert,) = watcher_of(db, rules=rules, sinks=[]).evaluate_once(NOW)
    assert (alert.state, alert.service, alert.route) == ("NO_DATA", None, None)


def test_drift_rule_over_the_store(watcher_of: Callable[..., Watcher], store: Any) -> None:
    rules = parse_rules(
        """
[[rules]]
name = "faithfulness-drift"
kind = "drift"
metric = "faithfulness"
window = "1h"
baseline = "1d"
"""
    )
    add_scores(store, "faithfulness", [1.0] * 160 + [0.5] * 40, start=NOW - 25 * HOUR, end=NOW - HOUR)
    add_scores(store, "faithfulness", [1.0] * 40 + [0.5] * 30 + [0.0] * 30, start=NOW - HOUR + 1, end=NOW)
    (alert,) = watcher_of(store.target, rules=rules, sinks=[]).evaluate_once(NOW)
    assert alert.state == "ALERT" and alert.kind == "drift"
    assert "PSI" in alert.message


def test_the_thread_evaluates_until_stopped(watcher_of: Callable[..., Watcher], store: Any, receiver: Receiver) -> None:
    rules = parse_rules(SPIKE_RULES.format(url=receiver.url).replace('interval = "1s"', 'interval = "50ms"'))
    add_scores(store, "hallucination", pattern(1000, 20), start=NOW - 25 * HOUR, end=NOW - HOUR)
    add_scores(store, "hallucination", pattern(200, 4), start=NOW - HOUR + 1, end=NOW)
    watcher = watcher_of(store.target, rules=rules, clock=lambda: NOW)
    watcher.start()
    try:
        assert receiver.next()["alert"]["state"] == "ALERT"
    finally:
        watcher.stop()
    assert [r["state"] for r in alert_rows(store)] == ["ALERT"]
    with pytest.raises(RuntimeError, match="cannot be restarted"):
        watcher.start()


def _alert() -> Alert:
    return Alert(NOW, "r", "spike", "hallucination", "shop", None, "ALERT", None, 9.0, 8.0, "rate up")


def test_webhook_retries_a_5xx_then_delivers(receiver: Receiver) -> None:
    receiver.statuses = [503, 500]
    sink = WebhookSink(receiver.url, retries=2, backoff=0.01)
    sink.send(_alert())
    assert sink.flush(10)
    assert receiver.next()["alert"]["message"] == "rate up"
    assert (sink.delivered, sink.failed) == (1, 0)
    sink.close()


def test_webhook_gives_up_on_a_4xx_and_an_unreachable_url(receiver: Receiver) -> None:
    receiver.statuses = [400]
    sink = WebhookSink(receiver.url, retries=3, backoff=0.01)
    sink.send(_alert())
    assert sink.flush(10)
    assert (sink.delivered, sink.failed) == (0, 1)
    sink.close()

    dead = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = dead.server_address[1]
    dead.server_close()  # nothing listens there now
    unreachable = WebhookSink(f"http://127.0.0.1:{port}/", retries=1, backoff=0.01, timeout=1)
    unreachable.send(_alert())  # returns at once; the failure is counted and logged, never raised
    assert unreachable.flush(10)
    assert unreachable.failed == 1
    unreachable.close()


def test_alert_text_and_payload() -> None:
    alert = _alert()
    assert alert.text == "*ALERT* r: hallucination [service=shop]: rate up"
    payload = alert.payload()
    assert payload["text"] == alert.text and payload["alert"]["threshold"] == 8.0
    ok = Alert(NOW, "r", "spike", "hallucination", None, None, "OK", "WARNING", 1.0, 8.0, "fine")
    assert ok.resolved and ok.text.startswith("*RESOLVED* r: hallucination: ")
    LogSink().send(ok)  # INFO, no exception


def test_a_bad_rules_file_fails_at_construction(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text('[[rules]]\nname = "x"\nkind = "spike"\nmetric = "hallucination"\nshift = 0.5\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"`shift` = 0\.5 is out of range"):
        Watcher(tmp_path / "db.sqlite", path)


def test_end_to_end_spans_over_otlp_raise_an_alert_on_the_webhook(
    tmp_path: Path, store_target: str, receiver: Receiver
) -> None:
    """An app's scored RAG spans, sent over OTLP/HTTP to a real collector, spike -> ALERT on the webhook; on
    either engine."""
    rules_path = tmp_path / "rules.toml"
    rules_path.write_text(
        SPIKE_RULES.format(url=receiver.url).replace('interval = "1s"', 'interval = "100ms"')
        + "baseline_rate = 0.05\n",
        encoding="utf-8",
    )
    factory = SpanFactory(service="shop")
    for i in range(60):
        hallucination = 0.9 if i % 3 == 0 else 0.2
        factory.rag(scores={"hallucination": hallucination, "faithfulness": 1.0 - hallucination}, decision="evaluated")
    collector = start_collector(store_target, watch=True, page=True, rules=rules_path)
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{collector.http_port}/v1/traces",
            data=otlp_bytes(factory.all()),
            headers={"Content-Type": "application/x-protobuf"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
        body = receiver.next()
        assert body["alert"]["state"] == "ALERT" and body["alert"]["service"] == "shop"
        assert "bad rate 33.3% over the last 60 records vs baseline 5.0%" in body["text"]
        with urllib.request.urlopen(f"http://127.0.0.1:{collector.http_port}/", timeout=30) as response:
            page = response.read().decode("utf-8")
        assert "hallucination over time (lower is better)" in page
        assert '<b id="firing">1</b>' in page
    finally:
        collector.stop()


@pytest.mark.parametrize("group_by", ["service", "service_route"])
def test_the_group_without_a_service_counts_only_its_own_rows(
    watcher_of: Callable[..., Watcher], store: Any, group_by: str
) -> None:
    rules = parse_rules(
        f"""
[[rules]]
name = "faithfulness-low"
kind = "threshold"
metric = "faithfulness"
window = "15m"
threshold = 0.7
min_records = 20
group_by = "{group_by}"
"""
    )
    add_scores(store, "faithfulness", [0.2] * 30, start=NOW - 10 * MINUTE, end=NOW)
    add_scores(store, "faithfulness", [0.95] * 25, start=NOW - 10 * MINUTE, end=NOW, service=None)
    alerts = watcher_of(store.target, rules=rules, sinks=[]).evaluate_once(NOW)
    states = {alert.service: (alert.state, alert.value) for alert in alerts}
    assert states["shop"] == ("ALERT", pytest.approx(0.2))
    # Over all 55 rows it would be a second, unlabelled ALERT (mean 0.54); over its own 25 it is healthy.
    assert states[None] == ("OK", pytest.approx(0.95))
