"""The live page's alert panel: each group that is not OK, its acknowledgement and silences, with buttons that
acknowledge, silence and end a silence through the alert API (``_http/_alert_api.py``).

Only the live page has it (a report written to a file has no collector behind it). The buttons send JSON with
``fetch`` and then reload the page; the browser's session cookie goes along, and the CSRF token from the
``ragtrace_csrf`` cookie in ``X-CSRF-Token`` (``_http/_auth.py``).
Every value shown is HTML-escaped, and the group a button acts on travels in ``data-*`` attributes, never in
script text.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from urllib.parse import urlencode

from ragtrace_collector._report._format import iso
from ragtrace_collector._store import ALERT_TABLES, Connection
from ragtrace_collector._store.alerts import GroupView, Silence, group_views, silences

__all__ = ["AlertPanel", "alert_panel_html", "read_alert_panel"]


@dataclass(frozen=True, slots=True)
class AlertPanel:
    """What the panel shows: the groups not OK, and the silences not over yet."""

    groups: tuple[GroupView, ...]
    silences: tuple[Silence, ...]


def read_alert_panel(conn: Connection, tables: set[str], now_ns: int) -> AlertPanel:
    """The panel's data; empty while the watcher has not created its tables."""
    if not set(ALERT_TABLES) <= tables:
        return AlertPanel((), ())
    groups = tuple(v for v in group_views(conn, now_ns) if v.state != "OK")
    pending = tuple(s for s in silences(conn) if s.ends_ns > now_ns)
    return AlertPanel(groups, pending)


_SCRIPT = """
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-api]");
  if (!button) return;
  const url = button.dataset.api;
  // The CSRF token the guard (_http/_auth.py) set beside the session: only this collector's pages can read it.
  const csrf = (document.cookie.split("; ").find((c) => c.startsWith("ragtrace_csrf=")) || "").slice(14);
  const body = button.dataset.body ? JSON.parse(button.dataset.body) : null;
  const form = button.closest("form");
  if (body && form && form.elements.duration) body.duration = form.elements.duration.value;
  button.disabled = true;
  const headers = {"Content-Type": "application/json", "X-CSRF-Token": csrf};
  const reply = await fetch(url, {method: button.dataset.method, headers: headers,
                                  body: body ? JSON.stringify(body) : undefined});
  if (!reply.ok) {
    const said = await reply.json().catch(() => ({}));
    document.getElementById("alert-error").textContent = said.error || ("HTTP " + reply.status);
    button.disabled = false;
    return;
  }
  location.reload();
});
"""


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
    """The panel as HTML (with its script), or a line saying nothing is firing."""
    e = html.escape
    parts = ['<h2>Alerts</h2><section id="alerts">', '<p id="alert-error" class="issue" role="alert"></p>']
    if not panel.groups:
        parts.append('<p class="muted">Every alert group is OK.</p>')
    for group in panel.groups:
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
        buttons.append(
            '<label>silence for <select name="duration"><option>1h</option><option>4h</option>'
            "<option>24h</option></select></label> " + _button("Silence", "POST", "/api/silences", target)
        )
        parts.append(
            f'<form class="alert-group state-{e(group.state)}" onsubmit="return false">'
            f"<b>{e(group.state)}</b> {e(group.rule)} ({e(group.metric)}, {e(_scope(group.service, group.route))}) "
            f"since {e(iso(group.since_ns))}"
            + (f' <span class="muted">[{e("; ".join(notes))}]</span>' if notes else "")
            + f' <a class="alert-view" href="/alert?{e(_group_query(group))}">the alert and its records</a>'
            + f'<br><span class="muted">{e(group.message or "")}</span><br>{" ".join(buttons)}</form>'
        )
    if panel.silences:
        parts.append('<h3>Silences</h3><ul id="silences">')
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
    parts.append(f"</section><script>{_SCRIPT}</script>")
    return "\n".join(parts)
