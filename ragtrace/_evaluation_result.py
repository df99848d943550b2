"""What ``evaluate()`` returns: per-record results, per-metric summaries and the Markdown report.

``EvaluationResult`` holds every record's ``SuiteResult``, a ``MetricSummary`` per metric (measured
count, mean, min, max, why the rest are absent), the worst records and the total judge cost;
``to_markdown()`` renders them. ``goodness`` puts every metric on a higher-is-better scale.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ragtrace._eval_input import BadLine
from ragtrace._record import RagRecord
from ragtrace.metrics._base import REASON_JUDGE_ERROR, Cost, Direction, Score
from ragtrace.metrics._suite import SuiteResult

__all__ = ["DEFAULT_THRESHOLD", "EvaluationResult", "MetricSummary", "RecordResult", "goodness", "summarise"]

SKIPPED_SHOWN = 20
"""The report lists at most this many skipped lines, then counts the rest."""

_EMPTY = "(empty)"
"""How the worst records show an answer that is empty: a blank cell would read as a rendering fault."""

DEFAULT_THRESHOLD = 0.6
"""A record has a problem when some metric's goodness (value, or 1 - value when lower is better) is below this."""


def goodness(score: Score) -> float | None:
    """The score on a higher-is-better scale in [0, 1], or None when absent."""
    if not score.ok or score.value is None:
        return None
    value = min(1.0, max(0.0, score.value))
    return value if score.direction == "higher" else 1.0 - value


@dataclass(frozen=True, slots=True)
class RecordResult:
    """One record, where it was in the input, and its scores.

    ``index`` is the record's 0-based position among the records given; ``line`` is its 1-based line
    in the JSONL file it was read from (blank and skipped lines counted), None when it was not read
    from a file.
    """

    index: int
    record: RagRecord
    result: SuiteResult
    line: int | None = None

    @property
    def overall(self) -> float | None:
        """Mean goodness of the measured scores (lower-is-better metrics flipped), None if none was measured."""
        values = [g for g in map(goodness, self.result.scores.values()) if g is not None]
        return math.fsum(values) / len(values) if values else None

    @property
    def empty_answer(self) -> bool:
        """True when the record has no answer (empty or blank): a failure of the app in itself, which the
        answer metrics cannot score (absent, ``no_answer``), so no low score would show it."""
        return not self.record.answer.strip()

    def issues(self, threshold: float = DEFAULT_THRESHOLD) -> list[Score]:
        """The measured scores whose goodness is below ``threshold``."""
        return [s for s in self.result.scores.values() if (g := goodness(s)) is not None and g < threshold]

    def problem(self, threshold: float = DEFAULT_THRESHOLD) -> bool:
        """True when the record belongs among the worst: an empty answer, or some score below ``threshold``."""
        return self.empty_answer or bool(self.issues(threshold))


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """One metric over all records: how many were measured, their mean/min/max, and why others are absent.

    ``absent`` counts the absent scores by reason (``judge_error``, ``no_chunks``, ...); ``errors``
    counts the ``judge_error`` ones by the judge's error type (``connection``, ``timeout``,
    ``authentication``, ...), which says what to fix.
    """

    name: str
    direction: Direction
    measured: int
    total: int
    mean: float | None
    minimum: float | None
    maximum: float | None
    absent: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    errors: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """Scores of many records with their aggregate; ``to_markdown()`` renders the report.

    ``skipped`` lists the lines of the input file that were not records (read with ``strict=False``).
    ``stopped`` says why the run stopped early (the judge could not be reached), in which case
    ``not_scored`` records were never scored and are not in ``records``.
    """

    records: tuple[RecordResult, ...]
    metrics: tuple[str, ...]
    summary: Mapping[str, MetricSummary]
    cost: Cost
    judge: str
    seconds: float
    skipped: tuple[BadLine, ...] = ()
    not_scored: int = 0
    stopped: str | None = None

    @property
    def count(self) -> int:
        """Records scored."""
        return len(self.records)

    @property
    def scored(self) -> int:
        """Records with at least one measured score."""
        return sum(1 for r in self.records if any(s.ok for s in r.result.scores.values()))

    @property
    def errors(self) -> dict[str, int]:
        """Failed scores (status ``error``) over all records and metrics, by error type, most frequent first."""
        counts = Counter(
            s.error_type or s.reason or s.status for r in self.records for s in r.result.scores.values() if _failed(s)
        )
        return dict(counts.most_common())

    @property
    def judge_failed(self) -> bool:
        """True when there were records but none got a score, and judge errors are why (some score failed).

        ``ragtrace eval`` exits 1 then: a dead endpoint or a wrong key must not look like a run.
        """
        return self.count > 0 and self.scored == 0 and bool(self.errors)

    @property
    def means(self) -> dict[str, float | None]:
        """Mean of each metric over the records where it was measured."""
        return {name: s.mean for name, s in self.summary.items()}

    def worst(self, n: int = 10, threshold: float = DEFAULT_THRESHOLD) -> list[RecordResult]:
        """Up to ``n`` records with a problem (an empty answer, or some metric below ``threshold``,
        direction-aware), worst first: empty answers first, then by ``overall``."""
        problems = [r for r in self.records if r.problem(threshold)]
        problems.sort(key=lambda r: (not r.empty_answer, r.overall if r.overall is not None else 1.0, r.index))
        return problems[:n]

    def to_markdown(self, worst: int = 10, threshold: float = DEFAULT_THRESHOLD) -> str:
        """A markdown report: totals, one row per metric, the worst records and their issues, the skipped lines.

        A worst record is shown with its query and answer, and numbered by its line in the file it was
        read from (``line``), or by its 0-based position (``#``) when it was not read from a file. A record
        with no answer is listed first, its answer shown as ``(empty)`` and its first issue ``empty answer``.
        """
        cost = self.cost
        lines = [
            "# ragtrace evaluation",
            "",
            f"- records: {self.count}"
            + (f" of {self.count + self.not_scored}, stopped early: {self.stopped}" if self.stopped else ""),
            f"- judge: `{self.judge}`",
            f"- judge calls: {cost.calls} ({cost.chat_calls} chat, {cost.embedding_calls} embeddings)"
            + (f", {cost.calls / self.count:.2f} per record" if self.count else ""),
            f"- tokens: {cost.prompt_tokens} prompt, {cost.completion_tokens} completion",
            f"- wall time: {self.seconds:.1f} s",
            f"- overall (mean goodness per record): {_spread([r.overall for r in self.records])}",
        ]
        if self.skipped:
            lines.append(f"- skipped lines (not records, not scored): {len(self.skipped)}, listed at the end")
        lines += [
            "",
            "| metric | better | measured | mean | min | max | absent (reason: count) |",
            "|---|---|---|---|---|---|---|",
        ]
        for s in self.summary.values():
            absent = ", ".join(_absent_cell(reason, n, s) for reason, n in sorted(s.absent.items())) or "-"
            lines.append(
                f"| {s.name} | {s.direction} | {s.measured}/{s.total} | {_num(s.mean)} | {_num(s.minimum)} "
                f"| {_num(s.maximum)} | {absent} |"
            )
        bad = self.worst(worst, threshold)
        lines += ["", f"## Worst records (an empty answer, or a metric below {threshold:g}, direction-aware)", ""]
        if not bad:
            lines.append("None.")
        else:
            # Records read from a file are named by their line, the number an editor jumps to.
            by_line = all(r.line is not None for r in bad)
            lines += [f"| {'line' if by_line else '#'} | query | answer | overall | issues |", "|---|---|---|---|---|"]
            for r in bad:
                number = r.line if by_line else r.index
                issues = ["empty answer"] if r.empty_answer else []
                issues += [f"{s.name} {_num(s.value)}" for s in r.issues(threshold)]
                answer = _EMPTY if r.empty_answer else _cell(r.record.answer)
                lines.append(
                    f"| {number} | {_cell(r.record.query)} | {answer} | {_num(r.overall)} | {', '.join(issues)} |"
                )
        if self.skipped:
            lines += ["", f"## Skipped lines ({len(self.skipped)})", ""]
            lines += [f"- {_cell(str(skip), 200)}" for skip in self.skipped[:SKIPPED_SHOWN]]
            if len(self.skipped) > SKIPPED_SHOWN:
                lines.append(f"- and {len(self.skipped) - SKIPPED_SHOWN} more")
        return "\n".join(lines) + "\n"


def _failed(score: Score) -> bool:
    return not score.ok and score.status == "error"


def _absent_cell(reason: str, count: int, summary: MetricSummary) -> str:
    # A judge error says what broke: "judge_error: 3 (connection)", or with several kinds
    # "judge_error: 3 (connection: 2, timeout: 1)". Other reasons say it themselves.
    kinds = summary.errors if reason == REASON_JUDGE_ERROR else {}
    if not kinds:
        return f"{reason}: {count}"
    if len(kinds) == 1:
        return f"{reason}: {count} ({next(iter(kinds))})"
    return f"{reason}: {count} ({', '.join(f'{kind}: {n}' for kind, n in kinds.items())})"


def _spread(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "-"
    return f"mean {math.fsum(known) / len(known):.3f}, min {min(known):.3f}, max {max(known):.3f}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cell(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def summarise(name: str, direction: Direction, scores: Sequence[Score]) -> MetricSummary:
    values = [s.value for s in scores if s.ok and s.value is not None]
    reasons = Counter(s.reason or s.status for s in scores if not s.ok)
    errors = Counter(s.error_type or "unknown" for s in scores if not s.ok and s.reason == REASON_JUDGE_ERROR)
    return MetricSummary(
        name=name,
        direction=direction,
        measured=len(values),
        total=len(scores),
        mean=math.fsum(values) / len(values) if values else None,
        minimum=min(values) if values else None,
        maximum=max(values) if values else None,
        absent=MappingProxyType(dict(reasons)),
        errors=MappingProxyType(dict(errors.most_common())),
    )
