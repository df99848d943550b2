"""``make demo``: a live RAG app scored by ragtrace, a hallucination spike, and the alert that catches it.

What it does, in order (about a minute on two cores):

1. starts ``ragtrace-collector serve`` on free loopback ports with a fresh SQLite file under
   ``./.ragtrace/`` and demo alert rules (evaluated every second, windows of seconds instead of hours,
   a webhook to a receiver in this process);
2. configures ragtrace in this process (OTLP/HTTP to the collector, offline judge, sample rate 0.5)
   and asks the support bot 300 questions at a steady pace, with ``--degrade-after 150``: from then
   on most answers come from the wrong document with invented names, numbers and dates;
3. waits until the collector has every RAG record and the spike alert has fired, then prints the
   alert, the mean scores before and after the degradation, the HTML report's path and the live page.

Every process it starts is stopped at the end, on failure, on Ctrl-C and on SIGTERM. With
``--keep-serving`` (the default when run in a terminal) the collector stays up until Enter is pressed,
so the live page can be opened.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (``python examples/demo.py``): make ``examples`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from examples._harness import Child, Children, WebhookInbox, free_port, poll, terminate_on_sigterm
from ragtrace import semconv

SPIKE_RULE = "hallucination-spike"
"""The demo rule that must fire."""

DEMO_RULES = """\
# Demo alert rules: the same detectors as the defaults, on a time scale of seconds so a two-minute
# demo can show them. The spike rule learns the hallucination rate from the records before the
# recent window and fires when the recent records' rate jumps (Bernoulli CUSUM).
interval = "1s"
renotify = "1h"

[[sinks]]
name = "demo-webhook"
type = "webhook"
url = "{webhook}"

[[sinks]]
name = "log"
type = "log"

[[rules]]
name = "hallucination-spike"
kind = "spike"
metric = "hallucinated_claim"
cutoff = 0.5
shift = 4.0
h = 8.0
warning_h = 4.0
min_rate = 0.02
window = "{window}s"
max_records = 500
baseline = "10m"
min_records = 10
min_baseline = 30
group_by = "service"

[[rules]]
name = "faithfulness-low"
kind = "threshold"
metric = "faithfulness"
window = "{window}s"
threshold = 0.5
warning = 0.55
min_records = 10
group_by = "service"
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=300, help="questions asked (default 300)")
    parser.add_argument("--degrade-after", type=int, default=150, help="first degraded question (default 150)")
    parser.add_argument("--degrade-rate", type=float, default=0.8, help="share of answers degraded (default 0.8)")
    parser.add_argument("--sample-rate", type=float, default=0.5, help="share of calls scored (default 0.5)")
    parser.add_argument("--pace", type=float, default=8.0, help="questions per second, like live traffic (default 8)")
    parser.add_argument("--workdir", type=Path, default=Path(".ragtrace"), help="where the SQLite file goes")
    parser.add_argument("--keep-serving", action=argparse.BooleanOptionalAction, default=None,
                        help="keep the collector up until Enter (default: when stdin is a terminal)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for records and the alert")
    return parser


def _query(db: Path, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Read the collector's store (read-only; the collector keeps writing in WAL mode)."""
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
    try:
        return conn.execute(sql, list(args)).fetchall()
    except sqlite3.OperationalError:  # a table not created yet
        return []
    finally:
        conn.close()


def _scores_by_phase(db: Path, degrade_after: int) -> dict[str, tuple[float | None, int, float | None, int]]:
    """Mean of every metric before and after the degradation: {metric: (mean_before, n, mean_after, n)}.

    The phase comes from the ``question_index`` the bot records in the span's metadata.
    """
    rows = _query(
        db,
        "SELECT s.metric, s.value, sp.attributes FROM scores s JOIN spans sp ON sp.span_id = s.span_id "
        "WHERE s.value IS NOT NULL",
    )
    phases: dict[str, tuple[list[float], list[float]]] = {}
    for metric, value, attributes in rows:
        metadata = json.loads(json.loads(attributes).get(semconv.METADATA) or "{}")
        before, after = phases.setdefault(metric, ([], []))
        (before if metadata.get("question_index", 0) < degrade_after else after).append(float(value))

    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    return {m: (mean(b), len(b), mean(a), len(a)) for m, (b, a) in sorted(phases.items())}


def _start_collector(children: Children, workdir: Path, db: Path, rules: Path) -> tuple[Child, int]:
    port, grpc_port = free_port(), free_port()
    argv = [sys.executable, "-m", "ragtrace_collector", "serve", "--db", str(db), "--host", "127.0.0.1",
            "--port", str(port), "--grpc-port", str(grpc_port), "--rules", str(rules)]  # fmt: skip
    collector = children.start("ragtrace-collector", argv, workdir / "collector.log")
    collector.wait_http(f"http://127.0.0.1:{port}/", timeout=60.0)
    return collector, port


async def _ask_paced(bot: Any, count: int, pace: float) -> list[Any]:
    from tqdm import tqdm

    from examples.support_bot import run_questions

    loop = asyncio.get_running_loop()
    start = loop.time()
    answers: list[Any] = []
    with tqdm(total=count, unit="q", desc="asking the support bot", file=sys.stdout) as bar:
        for i in range(count):
            answers += await run_questions(bot, 1)
            bar.update()
            if i + 1 == bot.degrade.after:
                bar.write(f"  question {i + 1}: the bot degrades from here on (wrong chunks, invented facts)")
            # Steady traffic: the alert rules look at time windows, as they would in production.
            delay = start + (i + 1) / pace - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
    return answers


def _first_degraded_ns(db: Path) -> int | None:
    """End time of the first degraded answer's RAG span (the bot marks it in the span's metadata)."""
    times = [
        int(end_ns)
        for end_ns, attributes in _query(db, "SELECT end_ns, attributes FROM spans")
        if json.loads(json.loads(attributes).get(semconv.METADATA) or "{}").get("degraded") is True
    ]
    return min(times) if times else None


def _print_results(db: Path, args: argparse.Namespace, alert: dict[str, Any] | None, port: int, report: Path) -> None:
    print("\n== The alert that fired on the spike ==")
    if alert is not None:
        print(f"  webhook received: {alert.get('text')}")
        fired_ns = (alert.get("alert") or {}).get("time_ns")
        first_bad = _first_degraded_ns(db)
        if isinstance(fired_ns, int) and first_bad is not None:
            if fired_ns >= first_bad:
                print(f"  raised {(fired_ns - first_bad) / 1e9:.1f} s after the first degraded answer")
            else:
                print(f"  raised {(first_bad - fired_ns) / 1e9:.1f} s BEFORE the first degraded answer: a false alarm")
    print("  alert history (the collector's alerts table):")
    rows = _query(db, "SELECT rule, state, metric, service, message FROM alerts ORDER BY time_ns, id")
    for rule, state, metric, service, message in rows:
        print(f"    [{state:<7}] {rule} on {metric} ({service}): {message}")
    print(f"  notifications of the spike's ALERT: {_spike_notifications(db)} (one alert until it resolves)")
    print("\n== Mean scores before and after the degradation ==")
    print(f"  {'metric':<30} {'before':>8} {'n':>5} {'after':>8} {'n':>5}")
    for metric, (before, n_before, after, n_after) in _scores_by_phase(db, args.degrade_after).items():
        b = "-" if before is None else f"{before:.3f}"
        a = "-" if after is None else f"{after:.3f}"
        print(f"  {metric:<30} {b:>8} {n_before:>5} {a:>8} {n_after:>5}")
    print("\n== Where to look ==")
    print(f"  HTML report:   {report.resolve()}")
    print(f"  live page:     http://127.0.0.1:{port}/")
    print(f"  SQLite store:  {db.resolve()}  (opens in Datasette as it is)")


def _spike_notifications(db: Path) -> int:
    """How many times the spike rule's ALERT was sent (entries and reminders; silenced rows are not sent)."""
    rows = _query(db, "SELECT COUNT(*) FROM alerts WHERE rule = ? AND state = 'ALERT' AND sinks != '[]'", [SPIKE_RULE])
    return int(rows[0][0]) if rows else 0


def _is_spike_alert(body: dict[str, Any]) -> bool:
    alert = body.get("alert") or {}
    return alert.get("rule") == SPIKE_RULE and alert.get("state") == "ALERT"


def run(args: argparse.Namespace) -> int:
    """The whole demo; returns the exit status (0: the alert fired)."""
    import ragtrace
    from examples.support_bot import DegradeSwitch, build_bot
    from ragtrace.judges.offline import OfflineJudge

    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "demo.db"
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)
    inbox = WebhookInbox()
    try:
        with Children() as children:
            rules = workdir / "demo_rules.toml"
            window = max(10, int(args.degrade_after / args.pace / 2))
            rules.write_text(DEMO_RULES.format(webhook=inbox.url, window=window), encoding="utf-8")
            print(f"starting ragtrace-collector (store {db}) ...", flush=True)
            collector, port = _start_collector(children, workdir, db, rules)
            print(f"collector up: OTLP/HTTP and live page on http://127.0.0.1:{port}/", flush=True)

            handle = ragtrace.configure(
                service_name="support-bot",
                endpoint=f"http://127.0.0.1:{port}",
                protocol="http/protobuf",
                sample_rate=args.sample_rate,
                judge=OfflineJudge(),
                export_metrics=False,  # the collector takes traces; score histograms are for Prometheus & co
            )
            try:
                print("indexing the support bot's documents with the offline embedder ...", flush=True)
                bot = build_bot(degrade=DegradeSwitch(after=args.degrade_after, rate=args.degrade_rate))
                asyncio.run(_ask_paced(bot, args.questions, args.pace))
                print("flushing: the last records are being scored and exported ...", flush=True)
                handle.shutdown()
            finally:
                # Interrupted: flush briefly while the collector still runs (it is stopped after this).
                handle.shutdown(timeout_millis=3000)

            def stored() -> bool:
                collector.check_alive()
                rows = _query(db, "SELECT COUNT(*) FROM rag_records")
                return bool(rows) and rows[0][0] >= args.questions

            if not poll(stored, args.timeout):
                print(f"the collector did not store all {args.questions} RAG records in time", file=sys.stderr)
                return 1
            print("waiting for the spike alert ...", flush=True)
            alert = inbox.wait_for(_is_spike_alert, args.timeout)
            fired = poll(
                lambda: _query(db, "SELECT 1 FROM alerts WHERE rule = ? AND state = 'ALERT'", [SPIKE_RULE]),
                5.0 if alert else args.timeout,
            )
            report = workdir / "report.html"
            status = children.start(
                "ragtrace-collector report",
                [sys.executable, "-m", "ragtrace_collector", "report", "--db", str(db), "--out", str(report)],
                workdir / "report.log",
            ).process.wait(timeout=120)
            if status != 0:
                print(f"the report failed (status {status}); see {workdir / 'report.log'}", file=sys.stderr)
            _print_results(db, args, alert, port, report)
            if not fired:
                print("\nNo hallucination-spike alert fired: see the collector's log", workdir / "collector.log")
                return 1
            if _spike_notifications(db) != 1:
                print("\nThe spike's ALERT was sent more than once: it flapped (see the alert history above)")
                return 1
            keep = sys.stdin.isatty() if args.keep_serving is None else args.keep_serving
            if keep:
                input("\nThe collector keeps serving the live page: press Enter to stop it. ")
            else:
                print(f"\n(the collector stops now; `ragtrace-collector serve --db {db}` serves the page again)")
            return 0
    finally:
        inbox.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``make demo``."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.questions < 1 or args.degrade_after < 0 or args.pace <= 0 or not 0 <= args.sample_rate <= 1:
        parser.error("--questions >= 1, --degrade-after >= 0, --pace > 0 and --sample-rate in [0, 1], please")
    if shutil.which("ragtrace-collector") is None and not (Path(sys.executable).parent / "ragtrace-collector").exists():
        print(
            "ragtrace-collector is not installed: run `make demo` (it creates .venv and installs it)", file=sys.stderr
        )
        return 2
    terminate_on_sigterm()
    started = time.monotonic()
    try:
        status = run(args)
    except KeyboardInterrupt:
        print("\ninterrupted: every process the demo started has been stopped", file=sys.stderr)
        return 130
    print(f"\ndemo finished in {time.monotonic() - started:.0f} s; every process it started is stopped")
    return status


if __name__ == "__main__":
    sys.exit(main())
