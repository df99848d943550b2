"""One notification (``Alert``: a rule's state change for a group) and the ``Sink`` protocol that delivers it."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from ragtrace_collector import _drift

logger = logging.getLogger("ragtrace_collector.alerts")
"""The logger of the watcher and its sinks."""


@dataclass(frozen=True, slots=True)
class Alert:
    """One state change (or reminder) of one rule for one service/route: what sinks receive and what the
    ``alerts`` table records. ``service``/``route`` are None when the rule does not split by them."""

    time_ns: int
    rule: str
    kind: str
    metric: str
    service: str | None
    route: str | None
    state: str
    previous_state: str | None
    value: float | None
    threshold: float | None
    message: str
    silenced: bool = False
    """Recorded while a silence matched the group: not sent to any sink."""

    @property
    def resolved(self) -> bool:
        """True when this is the all-clear after a WARNING or ALERT."""
        return self.state == _drift.OK and self.previous_state in (_drift.ALERT, _drift.WARNING)

    @property
    def reminder(self) -> bool:
        """True when this repeats an ALERT that is still firing (renotify interval elapsed)."""
        return self.state == self.previous_state

    @property
    def text(self) -> str:
        """One line for humans and for Slack's ``text`` field (Slack mrkdwn: ``*bold*``)."""
        if self.resolved:
            head = "RESOLVED"
        elif self.reminder:
            head = f"{self.state} (still firing)"
        else:
            head = self.state
        where = ", ".join(
            f"{key}={value}" for key, value in (("service", self.service), ("route", self.route)) if value is not None
        )
        scope = f" [{where}]" if where else ""
        return f"*{head}* {self.rule}: {self.metric}{scope}: {self.message}"

    def payload(self) -> dict[str, Any]:
        """The webhook body: Slack-compatible ``text`` plus the structured alert."""
        return {"text": self.text, "alert": asdict(self)}


@runtime_checkable
class Sink(Protocol):
    """Where notifications go. ``send`` returns quickly and never raises; ``close`` drains pending work."""

    name: str

    def send(self, alert: Alert) -> None:
        """Deliver (or queue) one notification."""
        ...

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is pending, within ``timeout`` seconds, and release resources."""
        ...
