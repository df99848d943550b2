"""collector/deploy/prometheus/: the shipped Prometheus rules and Alertmanager example.

promtool (Debian's ``prometheus``) runs the rules' unit tests, ``ragtrace-rules.test.yml`` beside them;
amtool (``prometheus-alertmanager``) checks the Alertmanager example and its routing. ``make test``
installs both (``make prometheus-deps``); without them those tests skip and say so. The rest needs no
binary: every name an expression reads must be one ragtrace emits, as Prometheus spells it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ragtrace import semconv
from ragtrace.metrics import METRIC_NAMES
from ragtrace.scoring.telemetry import _SCORE_BUCKETS

DEPLOY = Path(__file__).resolve().parents[2] / "collector" / "deploy" / "prometheus"
RULES = DEPLOY / "ragtrace-rules.yml"
RULES_TEST = DEPLOY / "ragtrace-rules.test.yml"
ALERTMANAGER = DEPLOY / "alertmanager.yml"

PROMTOOL = shutil.which("promtool")
AMTOOL = shutil.which("amtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed: run `make prometheus-deps` (Debian's prometheus)"
)
needs_amtool = pytest.mark.skipif(
    AMTOOL is None, reason="amtool is not installed: run `make prometheus-deps` (Debian's prometheus-alertmanager)"
)


def _prom(name: str) -> str:
    """An OpenTelemetry name as Prometheus stores it: dots become underscores (both the scrape exporter
    and OTLP translation do this; units in braces and the unit "1" of a histogram add no suffix)."""
    return name.replace(".", "_")


HISTOGRAM = _prom(semconv.METRIC_EVALUATION_SCORE)
EMITTED_SERIES = {f"{HISTOGRAM}_{suffix}" for suffix in ("bucket", "sum", "count")} | {
    f"{_prom(counter)}_total"
    for counter in (
        semconv.METRIC_EVAL_DECISIONS,
        semconv.METRIC_JUDGE_CALLS,
        semconv.METRIC_JUDGE_TOKENS,
        semconv.METRIC_JUDGE_ERRORS,
        semconv.METRIC_JUDGE_DEGENERATE,
    )
}
EMITTED_LABELS = {
    _prom(attribute)
    for attribute in (
        semconv.SERVICE_NAME,
        semconv.GEN_AI_EVALUATION_NAME,
        semconv.EVAL_DECISION,
        semconv.EVAL_JUDGE,
        semconv.JUDGE_STEP,
        semconv.ERROR_TYPE,
        semconv.GEN_AI_TOKEN_TYPE,
    )
} | {"le", "job", "instance"}  # the histogram's bucket bound; the target labels Prometheus adds
PROMQL_WORDS = {"sum", "by", "on", "and", "or", "rate", "increase"}
"""The PromQL functions, aggregations and operators the rules use; anything else must be a name above."""


def _run(*argv: str, cwd: Path = DEPLOY) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def _rules_text() -> str:
    return RULES.read_text(encoding="utf-8")


def _expressions(text: str) -> list[str]:
    """Every ``expr:`` of a rules file, inline or as an indented block (the two forms the file uses)."""
    found: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if not match:
            continue
        indent, inline = len(match[1]), match[2].strip()
        if inline not in ("|", ">", "|-", ">-"):
            found.append(inline)
            continue
        block = []
        for following in lines[i + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            block.append(following.strip())
        found.append(" ".join(block))
    return found


def _names(pattern: str, text: str) -> set[str]:
    return set(re.findall(pattern, text, flags=re.MULTILINE))


@pytest.mark.slow
@needs_promtool
def test_the_rules_pass_their_promtool_unit_tests() -> None:
    assert PROMTOOL is not None
    checked = _run(PROMTOOL, "check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = _run(PROMTOOL, "test", "rules", RULES_TEST.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


@pytest.mark.slow
@needs_promtool
def test_promtool_fails_a_rule_that_reads_the_wrong_bucket(tmp_path: Path) -> None:
    # The unit tests have teeth: reading the neighbouring bucket (le="0.4") misses the spike, and they say so.
    broken = _rules_text().replace('le="0.5"', 'le="0.4"')
    assert broken != _rules_text()
    (tmp_path / RULES.name).write_text(broken, encoding="utf-8")
    shutil.copy(RULES_TEST, tmp_path / RULES_TEST.name)
    assert PROMTOOL is not None
    tested = _run(PROMTOOL, "test", "rules", RULES_TEST.name, cwd=tmp_path)
    assert tested.returncode != 0
    assert "RagHallucinationSpike" in tested.stdout + tested.stderr


def test_every_alert_is_unit_tested_and_routable() -> None:
    text = _rules_text()
    alerts = _names(r"^\s*- alert: (\w+)$", text)
    assert alerts >= {"RagHallucinationSpike", "RagFaithfulnessDrop", "RagJudgeErrors", "RagScoringCoverageLow"}
    assert _names(r"^\s*- alertname: (\w+)$", RULES_TEST.read_text(encoding="utf-8")) == alerts
    # Each alert block carries the label the Alertmanager example routes on, and a severity.
    blocks = re.split(r"^\s*- (?:alert|record): ", text, flags=re.MULTILINE)[1:]
    for block in (b for b in blocks if b.split()[0] in alerts):
        assert "component: ragtrace" in block, block
        assert re.search(r"severity: (critical|warning|info)\b", block), block


def test_the_rules_read_only_series_and_labels_ragtrace_emits() -> None:
    text = _rules_text()
    recorded = _names(r"^\s*- record: (\S+)$", text)
    expressions = _expressions(text)
    assert len(expressions) == len(recorded) + len(_names(r"^\s*- alert: (\w+)$", text))
    for expr in expressions:
        matchers = re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"', expr)
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', " ", expr)
        bare = re.sub(r"\[\d+[smhdwy]\]", " ", bare)  # range durations
        bare = re.sub(r"\b\d+(\.\d+)?\b", " ", bare)  # numbers
        words = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", bare))
        unknown = words - PROMQL_WORDS - EMITTED_SERIES - EMITTED_LABELS - recorded
        assert not unknown, f"{sorted(unknown)} in {expr!r}: not a name ragtrace emits, as Prometheus spells it"
        for label, op, value in matchers:
            assert op in ("=", "=~"), expr
            options = value.split("|") if op == "=~" else [value]
            if label == _prom(semconv.GEN_AI_EVALUATION_NAME):
                assert set(options) <= set(METRIC_NAMES), value
            elif label == _prom(semconv.EVAL_DECISION):
                assert set(options) <= set(semconv.DECISIONS), value
            elif label == "le":
                # A bound ragtrace's histogram has, written as both paths render it (only the first, 0,
                # differs: "0.0" scraped, "0" by OTLP translation, so it would need both).
                assert op == "=" and float(value) in _SCORE_BUCKETS and float(value) != 0.0, value


@needs_amtool
def test_the_alertmanager_example_routes_ragtrace_alerts_to_the_webhook() -> None:
    assert AMTOOL is not None
    checked = _run(AMTOOL, "check-config", ALERTMANAGER.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for alert in sorted(_names(r"^\s*- alert: (\w+)$", _rules_text())):
        routed = _run(
            AMTOOL,
            "config",
            "routes",
            "test",
            f"--config.file={ALERTMANAGER.name}",
            "component=ragtrace",
            f"alertname={alert}",
            "service_name=support-bot",
        )
        assert routed.stdout.split() == ["ragtrace-webhook"], routed.stdout + routed.stderr
    other = _run(AMTOOL, "config", "routes", "test", f"--config.file={ALERTMANAGER.name}", "alertname=NodeDown")
    assert other.stdout.split() == ["default"], other.stdout + other.stderr
