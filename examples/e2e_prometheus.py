"""``make e2e-prometheus``: ragtrace's score metrics in a real Prometheus, the shipped rules firing on a
hallucination spike, and a real Alertmanager delivering the alert to a webhook.

1. serves the app's metrics for scraping on 127.0.0.1 (``opentelemetry-exporter-prometheus``'s reader
   and ``prometheus_client``'s HTTP server, both installed by ``make e2e-prometheus`` in its own venv);
2. starts Debian's ``prometheus-alertmanager`` (no cluster port) with the shipped example
   ``collector/deploy/prometheus/alertmanager.yml``, its webhook pointed at a receiver in this process,
   and Debian's ``prometheus`` scraping the app every second and evaluating the shipped
   ``ragtrace-rules.yml`` every second, each alert's ``for:`` hold cut to ``--hold`` (``--hold keep``
   runs the file verbatim: 5 to 15 minute holds);
3. runs the support bot with ragtrace (offline judge): healthy answers first, and checks Prometheus
   has them all and the spike alert stays inactive; then degraded answers (the wrong document, invented
   facts), and checks ``RagHallucinationSpike`` fires in Prometheus and reaches the webhook through
   Alertmanager's ``ragtrace`` route;
4. checks every process listens on loopback only, stops them all (also on failure and Ctrl-C) and
   removes their temporary directory. Exit status 0 when every check passed.

Not part of ``make test``: it installs two Debian packages and a venv and runs for a minute or two.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (``python examples/e2e_prometheus.py``): make ``examples`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples._harness import ChildFailed, Children, WebhookInbox, poll, terminate_on_sigterm
from examples._prometheus_stack import (
    ALERTMANAGER_EXAMPLE,
    RULES,
    ApiError,
    Prometheus,
    alertmanager_config,
    listening_addresses,
    prometheus_config,
    rules_with_hold,
    start_alertmanager,
    start_prometheus,
)

SERVICE = "support-bot"
"""The app's ``service.name``: the ``service_name`` label of every ragtrace series."""
JOB = "support-bot"
"""Prometheus' scrape job for the app."""
SPIKE = "RagHallucinationSpike"
"""The shipped alert that must fire."""
SHARE = f'service_name:ragtrace_hallucination_share:ratio_rate15m{{service_name="{SERVICE}"}}'
"""The shipped recording rule the spike alert reads."""
FIRST_BUCKET = r'le=~"0|0\\.0"'
"""The first score bucket (0) as either path renders it (docs/backends.md: a query selecting it takes both)."""


class CheckFailed(AssertionError):
    """One of the end-to-end checks did not hold."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prometheus", default=shutil.which("prometheus"), help="prometheus binary (Debian's)")
    alertmanager = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    parser.add_argument("--alertmanager", default=alertmanager, help="Alertmanager binary (Debian's)")
    parser.add_argument("--healthy", type=int, default=40, help="healthy answers first (default 40)")
    parser.add_argument("--degraded", type=int, default=60, help="then degraded answers (default 60)")
    parser.add_argument("--degrade-rate", type=float, default=0.8, help="share of those degraded (default 0.8)")
    parser.add_argument("--pace", type=float, default=5.0, help="questions per second (default 5)")
    parser.add_argument("--hold", default="10s", help="every alert's `for:` in this run, or `keep` (default 10s)")
    parser.add_argument("--workdir", type=Path, default=Path(".ragtrace/e2e-prometheus"), help="where logs go")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for each step")
    return parser


def _say(message: str) -> None:
    print(message, flush=True)


@contextmanager
def _metrics_endpoint() -> Iterator[tuple[Any, str]]:
    """The app's ``/metrics`` on a free loopback port: a PrometheusMetricReader and its HTTP server.

    Yields (reader, "127.0.0.1:port"). The reader is only read by scrapes: nothing here calls the
    MeterProvider's ``force_flush``, which would queue a second snapshot for the next scrape to show.
    """
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import start_http_server

    reader = PrometheusMetricReader()
    server, thread = start_http_server(0, addr="127.0.0.1")
    try:
        yield reader, f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5.0)


def _rules_file(hold: str, tmp: Path) -> Path:
    """The shipped rules file itself (``keep``), or a copy in ``tmp`` with every ``for:`` set to ``hold``."""
    if hold == "keep":
        _say(f"rules: {RULES.name} as shipped")
        return RULES
    text, changed = rules_with_hold(RULES.read_text(encoding="utf-8"), hold)
    if not changed:
        raise CheckFailed(f"{RULES} has no `for:` hold to cut")
    path = tmp / "ragtrace-rules.yml"
    path.write_text(text, encoding="utf-8")
    _say(f"rules: {RULES.name} as shipped but for its {changed} `for:` holds, cut to {hold} (--hold keep: as is)")
    return path


def _wait(what: str, check: Callable[[], Any], timeout: float) -> Any:
    result = poll(check, timeout, interval=0.5)
    if not result:
        raise CheckFailed(f"timed out after {timeout:.0f} s waiting for {what}")
    return result


def _next_evaluation(prometheus: Prometheus, alert: str, timeout: float) -> dict[str, Any]:
    """The alert's rule after an evaluation that started after this call: the second one to complete
    from now (the first may have started before)."""
    rule: dict[str, Any] = prometheus.rules()[alert]
    for _ in range(2):
        before = rule["lastEvaluation"]

        def evaluated(before: str = before) -> dict[str, Any] | None:
            now: dict[str, Any] = prometheus.rules()[alert]
            return now if now["lastEvaluation"] != before else None

        rule = _wait(f"an evaluation of {alert}", evaluated, timeout)
    return rule


def _firing(prometheus: Prometheus, alert: str) -> dict[str, Any] | None:
    rule: dict[str, Any] = prometheus.rules()[alert]
    return rule if rule["state"] == "firing" else None


def _ask(bot: Any, count: int, pace: float) -> None:
    """Ask ``count`` questions at ``pace`` a second, like live traffic scraped every second."""
    from examples.support_bot import run_questions

    async def paced() -> None:
        for _ in range(count):
            started = time.monotonic()
            await run_questions(bot, 1)
            await asyncio.sleep(max(0.0, 1.0 / pace - (time.monotonic() - started)))

    asyncio.run(paced())


def _scraped(prometheus: Prometheus, at_least: int) -> float | None:
    value = prometheus.value(f'sum(ragtrace_eval_decisions_total{{service_name="{SERVICE}"}})')
    return value if value is not None and value >= at_least else None


def _spike_delivered(body: dict[str, Any]) -> bool:
    return body.get("status") == "firing" and any(
        alert.get("labels", {}).get("alertname") == SPIKE and alert.get("labels", {}).get("service_name") == SERVICE
        for alert in body.get("alerts", [])
    )


def _check_loopback(pids: dict[str, int], alertmanager_port: int) -> None:
    """Every process listens on loopback only, and Alertmanager on its web port only (no cluster port)."""
    for name, pid in pids.items():
        addresses = listening_addresses(pid)
        public = sorted(a for a in addresses if not ipaddress.ip_address(a[0]).is_loopback)
        if public:
            raise CheckFailed(f"{name} listens beyond loopback: {public}")
        if name == "alertmanager" and {p for _, p in addresses} != {alertmanager_port}:
            raise CheckFailed(f"Alertmanager opened more than its web port: {sorted(addresses)}")
        _say(f"  {name} listens on {', '.join(f'{a}:{p}' for a, p in sorted(addresses))}")
    _say("every listener on loopback, no Alertmanager cluster port: PASS")


def _check_names(prometheus: Prometheus) -> None:
    """The names docs/backends.md and the rules use are the names Prometheus stored from the scrape."""
    names = {r["metric"]["__name__"] for r in prometheus.query(f'{{job="{JOB}", __name__=~"gen_ai_.+|ragtrace_.+"}}')}
    firsts = {
        r["metric"]["le"] for r in prometheus.query(f'gen_ai_evaluation_score_bucket{{job="{JOB}", {FIRST_BUCKET}}}')
    }
    _say(f"scraped: {', '.join(sorted(names))}; first bucket le={'/'.join(sorted(firsts))}")
    expected = {f"gen_ai_evaluation_score_{s}" for s in ("bucket", "sum", "count")} | {"ragtrace_eval_decisions_total"}
    if not expected <= names:
        raise CheckFailed(f"Prometheus lacks {sorted(expected - names)} among {sorted(names)}")
    if firsts != {"0.0"}:  # what docs/backends.md says the scrape path writes
        raise CheckFailed(f"the first bucket is le={sorted(firsts)} on the scrape path, docs/backends.md says 0.0")


def _healthy_phase(args: argparse.Namespace, prometheus: Prometheus, bot: Any) -> None:
    _say(f"asking {args.healthy} questions, answered from the retrieved chunks ...")
    _ask(bot, args.healthy, args.pace)
    _wait(
        f"Prometheus to hold {args.healthy} scoring decisions", lambda: _scraped(prometheus, args.healthy), args.timeout
    )
    rule = _next_evaluation(prometheus, SPIKE, args.timeout)
    share = prometheus.value(SHARE)
    shown = "no value" if share is None else f"{share:.2f}"
    if rule["state"] != "inactive":
        raise CheckFailed(f"{SPIKE} is {rule['state']} before any answer was degraded (share {shown})")
    _say(f"healthy: hallucination share {shown}, {SPIKE} inactive: PASS")


def _degraded_phase(args: argparse.Namespace, prometheus: Prometheus, inbox: WebhookInbox, bot: Any) -> None:
    _say(f"asking {args.degraded} more, {args.degrade_rate:.0%} of them from the wrong document ...")
    started = time.monotonic()
    _ask(bot, args.degraded, args.pace)
    hold = 16 * 60 if args.hold == "keep" else 0  # the verbatim rules hold for up to 15 minutes
    _wait(f"{SPIKE} to fire in Prometheus", lambda: _firing(prometheus, SPIKE), args.timeout + hold)
    share = prometheus.value(SHARE) or 0.0
    _say(
        f"degraded: hallucination share {share:.2f}, {SPIKE} firing in Prometheus "
        f"{time.monotonic() - started:.0f} s after the first degraded question: PASS"
    )
    others = {n: r["state"] for n, r in prometheus.rules().items() if r.get("type") == "alerting" and n != SPIKE}
    _say(f"  the other alerts: {', '.join(f'{n} {s}' for n, s in others.items())}")

    body = inbox.wait_for(_spike_delivered, args.timeout)
    if body is None:
        raise CheckFailed(f"Alertmanager delivered no firing {SPIKE} to the webhook; got {inbox.received}")
    alert = next(a for a in body["alerts"] if a["labels"].get("alertname") == SPIKE)
    if body.get("receiver") != "ragtrace-webhook" or alert["labels"].get("component") != "ragtrace":
        raise CheckFailed(f"the alert did not come through the example's ragtrace route: {body}")
    _say(
        f"webhook: {SPIKE} from receiver {body['receiver']!r}, group {body.get('groupLabels')}, "
        f"{time.monotonic() - started:.0f} s after the first degraded question: PASS"
    )
    _say(f"  summary: {alert['annotations'].get('summary')}")


def scenario(args: argparse.Namespace, prometheus: Prometheus, inbox: WebhookInbox, reader: Any) -> None:
    """The app side and every check on Prometheus and the webhook. Raises ``CheckFailed``."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import ragtrace
    from examples.support_bot import DegradeSwitch, build_bot
    from ragtrace.judges.offline import OfflineJudge

    handle = ragtrace.configure(
        service_name=SERVICE,
        exporter=InMemorySpanExporter(),  # the traces are not under test here; the metrics are
        metric_readers=[reader],
        judge=OfflineJudge(),
        sample_rate=1.0,
    )
    try:
        bot = build_bot(degrade=DegradeSwitch(after=args.healthy, rate=args.degrade_rate))
        _wait("Prometheus to scrape the app", lambda: prometheus.value(f'up{{job="{JOB}"}} == 1'), args.timeout)
        _healthy_phase(args, prometheus, bot)
        _check_names(prometheus)
        _degraded_phase(args, prometheus, inbox, bot)
    finally:
        handle.shutdown()


def run(args: argparse.Namespace) -> int:
    """Start the servers, run the scenario, stop everything; returns the exit status."""
    for name, binary in (("prometheus", args.prometheus), ("alertmanager", args.alertmanager)):
        if not binary or not Path(binary).exists():
            raise ChildFailed(f"{name} not found: run `make e2e-prometheus` (it installs Debian's packages)")
    args.workdir.mkdir(parents=True, exist_ok=True)
    inbox = WebhookInbox()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="ragtrace-prometheus-") as tmp_name,
            Children() as children,
            _metrics_endpoint() as (reader, app),
        ):
            tmp = Path(tmp_name)
            am_config = tmp / "alertmanager.yml"
            am_config.write_text(alertmanager_config(ALERTMANAGER_EXAMPLE.read_text(encoding="utf-8"), inbox.url))
            am, am_url = start_alertmanager(
                children, args.alertmanager, am_config, tmp / "alertmanager", args.workdir / "alertmanager.log"
            )
            alertmanager = am_url.removeprefix("http://")
            config = tmp / "prometheus.yml"
            config.write_text(
                prometheus_config(app=app, alertmanager=alertmanager, rules=_rules_file(args.hold, tmp), job=JOB)
            )
            prometheus = start_prometheus(
                children, args.prometheus, config, tmp / "prometheus", args.workdir / "prometheus.log"
            )
            _say(f"app metrics on http://{app}/metrics, Prometheus on {prometheus.url}, Alertmanager on {am_url}")
            _say(f"Prometheus loaded {', '.join(n for n in prometheus.rules() if ':' not in n)} and the recordings")
            try:
                scenario(args, prometheus, inbox, reader)
                pids = {
                    "this app (metrics, webhook)": os.getpid(),
                    "prometheus": prometheus.child.process.pid,
                    "alertmanager": am.process.pid,
                }
                _check_loopback(pids, int(alertmanager.rsplit(":", 1)[1]))
            except (CheckFailed, ApiError) as failure:
                print(f"FAIL: {failure}", file=sys.stderr)
                print(f"logs: {args.workdir}/prometheus.log, {args.workdir}/alertmanager.log", file=sys.stderr)
                return 1
    finally:
        inbox.close()
    _say("make e2e-prometheus: PASS (Prometheus, Alertmanager and the metrics endpoint stopped, temp dir removed)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``make e2e-prometheus``."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.healthy < 1 or args.degraded < 1 or args.pace <= 0 or not 0 < args.degrade_rate <= 1:
        parser.error("--healthy and --degraded >= 1, --pace > 0 and --degrade-rate in (0, 1], please")
    if args.hold != "keep":
        try:
            rules_with_hold("", args.hold)
        except ValueError as error:
            parser.error(str(error))
    terminate_on_sigterm()
    started = time.monotonic()
    try:
        status = run(args)
    except ChildFailed as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted: Prometheus and Alertmanager are stopped", file=sys.stderr)
        return 130
    print(f"finished in {time.monotonic() - started:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
