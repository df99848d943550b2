"""collector/deploy/prometheus/ragtrace-collector-rules.yml: the example rules over the collector's own metrics.

promtool (Debian's ``prometheus``; ``make prometheus-deps``) checks them and runs their unit tests, the
``.test.yml`` beside them; without it those tests skip and say so. Every ``ragtrace_collector_*`` name the rules
read must be one ``/metrics`` serves.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from ragtrace_collector._alerts import Watcher
from ragtrace_collector._otlp import Batch
from ragtrace_collector._prometheus import Sources, render
from ragtrace_collector._rules import parse_rules
from ragtrace_collector._stats import Stats
from ragtrace_collector._store.schema import SCORE_COLUMNS

from tests.collector._stores import whole_row

DEPLOY = Path(__file__).resolve().parents[2] / "collector" / "deploy" / "prometheus"
RULES = DEPLOY / "ragtrace-collector-rules.yml"
RULES_TEST = DEPLOY / "ragtrace-collector-rules.test.yml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed: run `make prometheus-deps` (Debian's prometheus)"
)
NS = 1_000_000_000


@needs_promtool
def test_promtool_checks_the_rules_and_their_unit_tests_pass() -> None:
    assert PROMTOOL is not None
    for argv in ([PROMTOOL, "check", "rules", RULES.name], [PROMTOOL, "test", "rules", RULES_TEST.name]):
        done = subprocess.run(argv, cwd=DEPLOY, capture_output=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


def test_every_name_the_rules_read_is_served_at_metrics(store_target: str, open_store: Callable[[], Any]) -> None:
    scores = [
        {"span_id": f"{i:016x}", "metric": "faithfulness", "value": 0.9, "service": "shop", "time_ns": i * NS}
        for i in range(1, 50)
    ]
    open_store().write(Batch(scores=[whole_row(score, SCORE_COLUMNS) for score in scores]))
    rules = parse_rules('[[rules]]\nname = "low"\nkind = "threshold"\nmetric = "faithfulness"\nthreshold = 0.7\n')
    watcher = Watcher(store_target, rules=rules, sinks=[])
    try:
        watcher.evaluate_once(60 * NS)
    finally:
        watcher.stop()  # ends its leadership (on PostgreSQL, a session of its own)
    sources = Sources(
        stats=Stats(),
        db_path=store_target,
        inflight_bytes=lambda: 0,
        inflight_limit_bytes=1024,
        scoring_queue=lambda: 0,
        forward_queue=lambda: 0,
        forward_dropped=lambda: 0,
        watching=True,
    )
    served = {s.name for f in text_string_to_metric_families(render(sources, 60 * NS).decode()) for s in f.samples}
    # Counters with no sample yet (nothing refused, nothing decided) are still served, as families.
    served |= {"ragtrace_collector_requests_refused_total", "ragtrace_collector_decisions_total"}
    read = set(re.findall(r"ragtrace_collector_[a-z_]+", RULES.read_text(encoding="utf-8")))
    assert read, "the rules read no collector metric"
    assert read <= served, read - served
