"""One notification (``Alert``: a rule's state change for a group) and the ``Sink`` protocol that delivers it."""

from __future__ import annotations

import hashlib
import json
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
    episode_ns: int | None = None
    """When the group entered ``state`` (the episode this notification is about)."""

    @property
    def idempotency_key(self) -> str:
        """The same for every delivery of one group's change into one episode (a reminder of it too): a receiver
        that dedupes on it never pages twice for one episode, whichever replica of a fleet sent it."""
        group = json.dumps([self.rule, self.service, self.route, self.state, self.episode_ns])
        return hashlib.sha256(group.encode("utf-8")).hexdigest()[:32]

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
        """The webhook body: Slack-compatible ``text``, the structured alert and its ``idempotency_key``."""
        return {"text": self.text, "alert": asdict(self), "idempotency_key": self.idempotency_key}


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
