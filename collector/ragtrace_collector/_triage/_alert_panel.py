"""The pages' alert controls: the overview's panel (each group that is not OK, its acknowledgement and silences) and
an alert page's controls of its own group, with buttons that acknowledge, silence and end a silence through the
alert API (``_http/_alert_api.py``).

Only the live pages have them (a report written to a file has no collector behind it). It lives with the pages
(``_triage``) so that both the overview (``_report``, which imports the pages) and the alert page use it: layers
import one way, the report the pages, never back. The buttons send JSON with
``fetch`` (``_triage/static/alerts.js``) and then reload the page; the browser's session cookie goes along, and the
CSRF token from the ``ragtrace_csrf`` cookie in ``X-CSRF-Token`` (``_http/_auth.py``).
Every value shown is HTML-escaped (``templates/alert_controls.html``, autoescaped), and the group a button acts on
travels in ``data-*`` attributes, never in script text.

A group's words (``describe``) are the same in the page's banner and in the panel: the message of the evaluation
that fired it, and, when the latest evaluation said something else (a window left without data while the alert
holds), that too, with its time. (The banner once read the firing transition and the panel the latest
evaluation: "mean 0.454 over 37 records is below 0.5" beside "0 scored records, need 10" for one alert.) Groups
with no data fold away under one line that says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from ragtrace_collector._store import ALERT_TABLES, Connection
from ragtrace_collector._store.alerts import GroupView, Silence, group_views, latest_alert_message, silences
from ragtrace_collector._triage._templates import macro
from ragtrace_collector._triage._time import fmt_time

__all__ = ["AlertPanel", "alert_panel_html", "describe", "group_controls_html", "read_alert_panel", "read_group_panel"]


@dataclass(frozen=True, slots=True)
class AlertPanel:
    """What the panel shows: the groups not OK, and the silences not over yet."""

    groups: tuple[GroupView, ...]
    silences: tuple[Silence, ...]
    fired: dict[tuple[str, str | None, str | None], str] = field(default_factory=dict)
    """Each firing group's message when it fired (its latest ALERT transition), by (rule, service, route)."""
    watched: bool = False
    """Whether a watcher has evaluated a rule in this store (it keeps a state per group), else there is nothing to
    show but the alerts table's rows."""
    scope_service: str | None = None
    """The page's service: only its groups (and those of every service) are shown."""


def read_alert_panel(conn: Connection, tables: set[str], now_ns: int, service: str | None = None) -> AlertPanel:
    """The panel's data (of ``service``'s groups and the groups of every service, when given); empty while the
    watcher has not created its tables."""
    if not set(ALERT_TABLES) <= tables:
        return AlertPanel((), ())
    views = group_views(conn, now_ns)
    groups = tuple(v for v in views if v.state != "OK" and (not service or v.service in (None, service)))
    pending = tuple(s for s in silences(conn) if s.ends_ns > now_ns)
    return AlertPanel(groups, pending, fired_messages(conn, groups), watched=bool(views), scope_service=service)


def read_group_panel(
    conn: Connection, tables: set[str], now_ns: int, rule: str, service: str | None, route: str | None
) -> AlertPanel:
    """One group's controls (an alert page's): the group in whatever state the watcher keeps it (none when it keeps
    none), and the silences not over yet that cover it."""
    if not set(ALERT_TABLES) <= tables:
        return AlertPanel((), ())
    views = group_views(conn, now_ns)
    groups = tuple(v for v in views if (v.rule, v.service, v.route) == (rule, service, route))
    pending = tuple(s for s in silences(conn) if s.ends_ns > now_ns and s.matches(rule, service, route))
    return AlertPanel(groups, pending, fired_messages(conn, groups), watched=bool(views), scope_service=service)


def fired_messages(conn: Connection, groups: tuple[GroupView, ...]) -> dict[tuple[str, str | None, str | None], str]:
    """The message each firing group's latest ALERT transition carried (what fired it)."""
    found: dict[tuple[str, str | None, str | None], str] = {}
    for g in groups:
        if g.state != "ALERT":
            continue
        message = latest_alert_message(conn, g.rule, g.service, g.route)
        if message is not None:
            found[(g.rule, g.service, g.route)] = message
    return found


def describe(group: GroupView, panel: AlertPanel) -> str:
    """A group's words, as HTML (escaped): its rule, metric and scope, since when, what fired it, and the latest
    evaluation when it said something else. The banner and the panel both use it."""
    return macro("alert_controls.html", "describe", _view(group, panel))


def alert_panel_html(panel: AlertPanel) -> str:
    """The panel as HTML (its buttons work with ``static/alerts.js``), or a line saying nothing is firing. Groups
    with no data are folded under one line that says why."""
    views = [_view(g, panel) for g in panel.groups]
    return macro(
        "alert_controls.html",
        "panel",
        {
            "watched": panel.watched,
            "measured": [v for v in views if v["state"] != "NO_DATA"],
            "quiet": [v for v in views if v["state"] == "NO_DATA"],
            "silences": _silences(panel),
        },
    )


def group_controls_html(panel: AlertPanel, *, rule: str, service: str | None, route: str | None) -> str:
    """An alert page's controls of its group (``read_group_panel``): its state now, the button that acknowledges its
    current ALERT (the group's, which may be a later one than the alert on the page), silence, and the silences
    that cover it, each with its End button. A group the watcher keeps no state for can still be silenced."""
    return macro(
        "alert_controls.html",
        "group_controls",
        {
            "groups": [_view(g, panel, link=False) for g in panel.groups],
            "target": json.dumps({"rule": rule, "service": service, "route": route}),
            "silences": _silences(panel),
        },
    )


def _view(group: GroupView, panel: AlertPanel, *, link: bool = True) -> dict[str, Any]:
    """What the templates show of a group: its words (``describe``), notes, buttons' target, and ``link``: whether
    to link its alert's page (not on that page)."""
    fired = panel.fired.get((group.rule, group.service, group.route)) if group.state == "ALERT" else None
    notes = []
    if group.ack is not None:
        who = f" by {group.ack.author}" if group.ack.author else ""
        notes.append(f"acknowledged{who} at {fmt_time(group.ack.time_ns)}")
    if group.silenced_by:
        notes.append("silenced (" + ", ".join(f"#{i}" for i in group.silenced_by) + ")")
    return {
        "rule": group.rule,
        "metric": group.metric,
        "scope": _scope(group.service, group.route),
        "state": group.state,
        "since_ns": group.since_ns,
        "evaluated_ns": group.evaluated_ns,
        "fired": fired,
        # What the latest evaluation said, when it differs from what fired the alert (a window left without data
        # while the alert holds).
        "latest": fired is not None
        and group.detected != group.state
        and bool(group.message)
        and group.message != fired,
        "detected": group.detected or "-",
        "message": group.message,
        "notes": "; ".join(notes),
        "can_ack": group.state == "ALERT" and group.ack is None,
        "target": json.dumps({"rule": group.rule, "service": group.service, "route": group.route}),
        "link": link,
        "query": _group_query(group),
    }


def _silences(panel: AlertPanel) -> list[dict[str, Any]]:
    return [
        {
            "id": item.id,
            "rule": item.rule or "every rule",
            "scope": _scope(item.service, item.route),
            "ends_ns": item.ends_ns,
            "author": item.author,
            "comment": item.comment,
        }
        for item in panel.silences
    ]


def _group_query(group: GroupView) -> str:
    """The alert view's query for a group (``/alert`` opens the group's latest ALERT)."""
    return urlencode(
        [(k, v) for k, v in (("rule", group.rule), ("service", group.service), ("route", group.route)) if v]
    )


def _scope(service: str | None, route: str | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in (("service", service), ("route", route)) if v is not None) or "all"
