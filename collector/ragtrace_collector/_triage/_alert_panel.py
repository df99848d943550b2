"""The pages' alert controls: the overview's panel (each group that is not OK, its acknowledgement and silences) and
an alert page's controls of its own group, with buttons that acknowledge, silence and end a silence through the
alert API (``_http/_alert_api.py``).

Only the live pages have them (a report written to a file has no collector behind it). It lives with the pages
(``_triage``) so that both the overview (``_report``, which imports the pages) and the alert page use it: layers
import one way, the report the pages, never back. The buttons send JSON with
``fetch`` (``_triage/static/alerts.js``) and then reload the page; the browser's session cookie goes along, and the
CSRF token from the ``ragtrace_csrf`` cookie in ``X-CSRF-Token`` (``_http/_auth.py``).
Every value shown is HTML-escaped, and the group a button acts on travels in ``data-*`` attributes, never in
script text.

A group's words (``describe``) are the same in the page's banner and in the panel: the message of the evaluation
that fired it, and, when the latest evaluation said something else (a window left without data while the alert
holds), that too, with its time. (The banner once read the firing transition and the panel the latest
evaluation: "mean 0.454 over 37 records is below 0.5" beside "0 scored records, need 10" for one alert.) Groups
with no data fold away under one line that says why.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from urllib.parse import urlencode

from ragtrace_collector._store import ALERT_TABLES, Connection
from ragtrace_collector._store.alerts import GroupView, Silence, group_views, latest_alert_message, silences
from ragtrace_collector._triage._layout import fmt_time as iso

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
    e = html.escape
    fired = panel.fired.get((group.rule, group.service, group.route))
    text = (
        f"{e(group.rule)} ({e(group.metric)}, {e(_scope(group.service, group.route))}) since {e(iso(group.since_ns))}"
    )
    if group.state == "ALERT" and fired is not None:
        text += f": {e(fired)}"
        if group.detected != group.state and group.message and group.message != fired:
            text += (
                f'<br><span class="muted">latest evaluation ({e(iso(group.evaluated_ns))}): '
                f"{e(group.detected or '-')}, "
                f"{e(group.message)}; the alert holds until the group is measured OK again</span>"
            )
        return text
    return text + (f': <span class="muted">{e(group.message)}</span>' if group.message else "")


def _group_query(group: GroupView) -> str:
    """The alert view's query for a group (``/alert`` opens the group's latest ALERT)."""
    return urlencode(
        [(k, v) for k, v in (("rule", group.rule), ("service", group.service), ("route", group.route)) if v]
    )


def _scope(service: str | None, route: str | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in (("service", service), ("route", route)) if v is not None) or "all"


def _button(label: str, method: str, api: str, body: str = "") -> str:
    e = html.escape
    data = f' data-body="{e(body)}"' if body else ""
    return f'<button type="button" data-method="{method}" data-api="{e(api)}"{data}>{e(label)}</button>'


def alert_panel_html(panel: AlertPanel) -> str:
    """The panel as HTML (its buttons work with ``static/alerts.js``), or a line saying nothing is firing. Groups
    with no data are folded under one line that says why."""
    parts = ['<h2>Alerts</h2><section id="alerts">', '<p id="alert-error" class="issue" role="alert"></p>']
    measured = [g for g in panel.groups if g.state != "NO_DATA"]
    quiet = [g for g in panel.groups if g.state == "NO_DATA"]
    if not panel.watched:
        parts.append(
            '<p class="muted">No alert rule has been evaluated in this store yet: the collector\'s watcher evaluates '
            "its rules (the defaults, or <code>serve --rules FILE</code>) once scored records arrive.</p>"
        )
    elif not measured:
        parts.append('<p class="muted">No alert group is firing or warning.</p>')
    for group in measured:
        parts.append(_group_html(group, panel))
    if quiet:
        parts.append(
            f'<details class="quiet" id="no-data"><summary>{len(quiet)} group{"s" if len(quiet) != 1 else ""} with '
            "no data</summary>"
            '<p class="muted">A group has no data when its window holds fewer scored records than its rule needs '
            "(<code>min_count</code>; for a drift rule, in the baseline too): the service sent nothing lately, its "
            "records were not sampled or not scored, or the rule's window is short for its traffic. Not measured is "
            "not fine: each says what it lacked.</p>"
            + "".join(_group_html(group, panel) for group in quiet)
            + "</details>"
        )
    parts.append(_silences_html(panel))
    parts.append("</section>")
    return "\n".join(parts)


def group_controls_html(panel: AlertPanel, *, rule: str, service: str | None, route: str | None) -> str:
    """An alert page's controls of its group (``read_group_panel``): its state now, the button that acknowledges its
    current ALERT (the group's, which may be a later one than the alert on the page), silence, and the silences
    that cover it, each with its End button. A group the watcher keeps no state for can still be silenced."""
    parts = [
        '<h2>Acknowledge or silence</h2><section id="alerts">',
        '<p id="alert-error" class="issue" role="alert"></p>',
    ]
    if panel.groups:
        parts += [_group_html(group, panel, link=False) for group in panel.groups]
    else:
        # No state: the watcher does not run this rule now (a rules file changed), or this store has no watcher.
        target = json.dumps({"rule": rule, "service": service, "route": route})
        parts.append(
            '<form class="alert-group"><span class="muted">The watcher keeps no state for this group now (its rule '
            "is not among the rules it runs, or no watcher evaluated this store): there is nothing to acknowledge."
            "</span><br>" + _silence_controls(target) + "</form>"
        )
    parts.append(_silences_html(panel))
    parts.append("</section>")
    return "\n".join(parts)


def _silences_html(panel: AlertPanel) -> str:
    """The silences not over yet, each with its End button; "" when there is none."""
    e = html.escape
    if not panel.silences:
        return ""
    parts = ['<h3>Silences</h3><ul id="silences">']
    for item in panel.silences:
        who = f" by {item.author}" if item.author else ""
        why = f": {item.comment}" if item.comment else ""
        parts.append(
            f"<li>#{item.id} {e(item.rule or 'every rule')} ({e(_scope(item.service, item.route))}) until "
            f"{e(iso(item.ends_ns))}{e(who)}{e(why)} "
            + _button("End silence", "DELETE", f"/api/silences/{item.id}")
            + "</li>"
        )
    parts.append("</ul>")
    return "".join(parts)


def _silence_controls(target: str) -> str:
    return (
        '<label>silence for <select name="duration"><option>1h</option><option>4h</option>'
        "<option>24h</option></select></label> " + _button("Silence", "POST", "/api/silences", target)
    )


def _group_html(group: GroupView, panel: AlertPanel, *, link: bool = True) -> str:
    """A group's state, words, notes and buttons; ``link``: with a link to its alert's page (not on that page)."""
    e = html.escape
    target = json.dumps({"rule": group.rule, "service": group.service, "route": group.route})
    notes = []
    if group.ack is not None:
        who = f" by {group.ack.author}" if group.ack.author else ""
        notes.append(f"acknowledged{who} at {iso(group.ack.time_ns)}")
    if group.silenced_by:
        notes.append("silenced (" + ", ".join(f"#{i}" for i in group.silenced_by) + ")")
    buttons = []
    if group.state == "ALERT" and group.ack is None:
        buttons.append(_button("Acknowledge", "POST", "/api/alerts/ack", target))
    buttons.append(_silence_controls(target))
    return (
        f'<form class="alert-group state-{e(group.state)}">'
        f"<b>{e(group.state)}</b> {describe(group, panel)}"
        + (f' <span class="muted">[{e("; ".join(notes))}]</span>' if notes else "")
        + (
            f' <a class="alert-view" href="/alert?{e(_group_query(group))}">the alert and its records</a>'
            if link
            else ""
        )
        + f"<br>{' '.join(buttons)}</form>"
    )
