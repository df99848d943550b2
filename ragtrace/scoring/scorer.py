"""Scoring one picked RAG span: the suite for its metrics and the judge, then the bookkeeping around it.

``JobScorer.score`` is what the worker runs for each job: it scores the record with the metrics the
sampler picked for it (a suite per distinct selection, built once), unless the judge rests
(``ragtrace.scoring.judge_pause``, which it tells how each record went), then charges the budget, records
the score, cost and judge-error metrics and logs judge failures, and sends the evaluations as OTel log
records and/or leaves them off the span (``ragtrace.scoring.evaluation_logs``, switched by ``RAGTRACE_EVALUATION_*``,
read once here). Those steps run after the scores are computed, so a step that fails is logged and never
costs the scores.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ragtrace import semconv
from ragtrace._foreign._json import hidden
from ragtrace.metrics import Suite
from ragtrace.scoring.evaluation_logs import EvaluationLogs, EvaluationOutput
from ragtrace.scoring.jobs import Outcome, Picked, outcome_of
from ragtrace.scoring.judge_errors import JudgeErrorLog

if TYPE_CHECKING:
    from ragtrace._sampling import Sampler
    from ragtrace.judges._base import Judge
    from ragtrace.scoring.judge_pause import JudgePause
    from ragtrace.scoring.telemetry import Telemetry

_log = logging.getLogger(__name__)


def content_captured(attributes: Mapping[str, object]) -> bool:
    """Whether the span carries its record's text, so scores may quote it (claims, a judge's words): a
    ragtrace span says so (``ragtrace.content.captured``); another instrumentation's span does when it
    holds the answer (``output.value``, not OpenInference's redaction placeholder). Anything else counts as
    not captured: privacy fails closed."""
    captured = attributes.get(semconv.RAGTRACE_CONTENT_CAPTURED)
    if isinstance(captured, bool):
        return captured
    output = attributes.get(semconv.OUTPUT_VALUE)
    return isinstance(output, str) and not hidden(output)


class JobScorer:
    """Scores jobs with ``suite`` (or the part of it a job's metrics name) through ``judge``."""

    def __init__(self, suite: Suite, judge: Judge, sampler: Sampler, telemetry: Telemetry, pause: JudgePause) -> None:
        self.judge = judge
        self._pause = pause
        self._all = suite.names
        self._suites: dict[tuple[str, ...], Suite] = {suite.names: suite}
        self._sampler = sampler
        self._telemetry = telemetry
        self._errors = JudgeErrorLog(judge.name)
        self._output = EvaluationOutput.from_env()
        self._logs = EvaluationLogs() if self._output.log_records else None

    async def score(self, job: Picked) -> Outcome:
        if not self._pause.admit():  # queued before the judge began to rest: it leaves without a call
            return Outcome(semconv.DECISION_ERROR, {semconv.EVAL_ERROR_TYPE: self._pause.cause})
        result = await self.suite_for(job.metrics).score(job.record, self.judge)
        scores = [result.scores[name] for name in job.metrics if name in result.scores]
        cost = result.cost
        self._pause.settle(scores)
        name = self.judge.name
        outcome = outcome_of(scores, cost, name, content=content_captured(job.span.attributes or {}))
        logs = self._logs
        # The scores are computed: a failing budget or metrics pipeline is logged, never costs them.
        steps: list[tuple[str, Callable[[], object]]] = [
            ("charging the budget", lambda: self._sampler.charge(name, cost)),
            ("recording score metrics", lambda: self._telemetry.scores(scores)),
            ("recording judge cost metrics", lambda: self._telemetry.cost(cost, judge=name)),
            ("recording judge errors", lambda: self._telemetry.judge_errors(scores, judge=name)),
            ("logging judge errors", lambda: self._errors.report(scores)),
        ]
        if logs is not None:
            steps.append(("emitting evaluation log records", lambda: logs.emit(job.span, outcome.events)))
        for what, step in steps:
            try:
                step()
            except Exception:
                _log.exception("ragtrace: %s failed; the scores are kept", what)
        # Without span events the evaluations still go out as attributes (and log records, when on).
        return outcome if self._output.span_events else replace(outcome, events=())

    def suite_for(self, names: tuple[str, ...]) -> Suite:
        """The suite of the metrics ``names`` (in the full suite's order)."""
        # Dense selection yields at most one subset per distinct rate, so this cache stays tiny.
        suite = self._suites.get(names)
        if suite is None:
            full = self._suites[self._all]
            suite = Suite([m for m in full.metrics if m.name in names])
            self._suites[names] = suite
        return suite
