"""The common frame of every built-in metric: input checks, capability checks, failure handling.

A subclass states what it reads (``needs`` plus ``uses_query``/``uses_answer``) and which judge steps
it calls, and implements ``_measure``. ``score`` never raises: a missing input, a missing judge
step, a judge failure or a malformed reply all come back as an absent ``Score`` with a reason.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ragtrace._secrets import scrub
from ragtrace.judges._base import JudgeCapabilityError, JudgeError
from ragtrace.metrics._base import (
    DETAIL_JUDGE,
    REASON_JUDGE_ERROR,
    REASON_JUDGE_LACKS_CAPABILITY,
    REASON_NEEDS_REFERENCE,
    REASON_NO_ANSWER,
    REASON_NO_CHUNKS,
    REASON_NO_QUERY,
    REASON_NOT_FINITE,
    REASON_UNPARSEABLE,
    ZERO_COST,
    Direction,
    Score,
    Status,
)
from ragtrace.metrics._steps import Steps

if TYPE_CHECKING:
    from ragtrace._record import RagRecord
    from ragtrace.judges._base import Judge

_log = logging.getLogger("ragtrace.metrics")

NEEDS_REFERENCE = "reference"
"""A ``needs`` entry: the record must carry a reference answer."""

NEEDS_CHUNKS = "chunks"
"""A ``needs`` entry: the record must carry at least one chunk."""


class JudgeMetric:
    """Base of the built-in metrics. Subclasses set the class attributes and implement ``_measure``."""

    name: str
    direction: Direction = "higher"
    needs: frozenset[str] = frozenset()
    capabilities: frozenset[str] = frozenset()
    uses_query: bool = False
    uses_answer: bool = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    async def score(self, record: RagRecord, judge: Judge) -> Score:
        """Score one record; never raises for bad input or a failing judge (see the module docstring)."""
        missing = self._check_inputs(record) or self._check_judge(judge)
        if missing is not None:
            return missing
        steps = Steps(judge)
        try:
            return await self._measure(record, steps)
        except JudgeCapabilityError as err:
            return self.absent("skipped", REASON_JUDGE_LACKS_CAPABILITY, str(err), steps, err.error_type)
        except JudgeError as err:
            reason = REASON_UNPARSEABLE if err.error_type == REASON_UNPARSEABLE else REASON_JUDGE_ERROR
            return self.absent("error", reason, f"{err.error_type}: {err}", steps, err.error_type)
        except Exception as err:
            # A judge outside the protocol (or a bug) must not take the caller down: record it.
            _log.warning("metric %s failed", self.name, exc_info=True)
            return self.absent("error", REASON_JUDGE_ERROR, f"{type(err).__name__}: {err}", steps, type(err).__name__)

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        raise NotImplementedError

    # ----------------------------------------------------------------------------------------------

    def _check_inputs(self, record: RagRecord) -> Score | None:
        if NEEDS_REFERENCE in self.needs and not (record.reference or "").strip():
            return self.absent("skipped", REASON_NEEDS_REFERENCE, f"{self.name} needs a reference answer")
        if self.uses_query and not record.query.strip():
            return self.absent("unmeasured", REASON_NO_QUERY, "the record has an empty query")
        if self.uses_answer and not record.answer.strip():
            return self.absent("unmeasured", REASON_NO_ANSWER, "the record has an empty answer")
        if NEEDS_CHUNKS in self.needs and not record.chunks:
            return self.absent("unmeasured", REASON_NO_CHUNKS, "the record has no retrieved chunks")
        return None

    def _check_judge(self, judge: Judge) -> Score | None:
        lacking = self.capabilities - judge.capabilities
        if not lacking:
            return None
        return self.absent(
            "skipped",
            REASON_JUDGE_LACKS_CAPABILITY,
            f"judge {judge.name!r} cannot {', '.join(sorted(lacking))}",
        )

    def absent(
        self,
        status: Status,
        reason: str,
        explanation: str,
        steps: Steps | None = None,
        error_type: str | None = None,
    ) -> Score:
        """An absent score of this metric, carrying what the steps so far cost."""
        return Score.absent(
            self.name,
            status,
            reason,
            direction=self.direction,
            explanation=scrub(explanation),  # a failure's message may quote an endpoint: it leaves the app
            error_type=error_type,
            cost=steps.cost if steps is not None else ZERO_COST,
        )

    def measured(
        self,
        value: float,
        steps: Steps,
        *,
        label: str | None = None,
        explanation: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> Score:
        """A measured score of this metric with the cost of its steps.

        A value that is not a finite number (a judge's NaN or infinity carried through the arithmetic) is
        an error with reason ``not_finite``: the house rule is never NaN on the wire.
        """
        if steps.decided_by is not None:
            details = {**(details or {}), DETAIL_JUDGE: steps.decided_by}
        if not math.isfinite(value):
            return self.absent(
                "error", REASON_NOT_FINITE, f"the arithmetic gave {value!r}: the judge's numbers do not compute", steps
            )
        return Score(
            name=self.name,
            value=value,
            direction=self.direction,
            label=label,
            explanation=explanation,
            cost=steps.cost,
            details=MappingProxyType(dict(details)) if details else MappingProxyType({}),
        )
