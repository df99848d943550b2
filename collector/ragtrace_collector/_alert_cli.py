"""``ragtrace-collector alerts``: list, acknowledge, silence and unsilence alerts of a running collector, through its
alert API (``_http/_alert_api.py``, the one the page's buttons use).

    ragtrace-collector alerts list
    ragtrace-collector alerts ack hallucination-spike --service shop --comment "rolling back the prompt"
    ragtrace-collector alerts silence hallucination-spike --service shop --for 2h
    ragtrace-collector alerts unsilence 3

``--url`` is the collector's HTTP address (default ``http://127.0.0.1:4318``); ``--token`` (or
``RAGTRACE_COLLECTOR_TOKEN``) when it has one. ``--json`` prints the API's answer as it is. The three go before
the action or after it (``alerts --url X list`` and ``alerts list --url X`` are the same). A refusal (an unknown
rule, a group not firing, a wrong token, a collector that is not there) is one line on standard error and exit
status 1.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from datetime import datetime, timezone
from typing import Any

import httpx

from ragtrace import environment_variables as env

__all__ = ["add_alert_commands", "run_alert_command"]

DEFAULT_URL = "http://127.0.0.1:4318"


def add_alert_commands(commands: Any) -> None:
    """Add ``alerts`` and its subcommands to the command line's subparsers."""
    alerts = commands.add_parser(
        "alerts",
        help="list, acknowledge, silence and unsilence the alerts of a running collector",
        description="List, acknowledge, silence and unsilence the alerts of a running collector (its alert API).",
        parents=[_shared_options(defaults=True)],
    )
    # The same options after the action too (``alerts list --url X``), as a parent of each action's parser.
    # Their defaults there are SUPPRESS: an action's default would overwrite a value given before the action.
    shared = [_shared_options(defaults=False)]
    actions = alerts.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="every alert group's state, and the silences not over yet", parents=shared)
    ack = actions.add_parser("ack", help="acknowledge a firing alert: no reminders until it resolves", parents=shared)
    ack.add_argument("rule", help="the rule's name")
    silence = actions.add_parser(
        "silence", help="send nothing for matching alerts for a while (still recorded)", parents=shared
    )
    silence.add_argument("rule", nargs="?", default=None, help="the rule's name (default: every rule)")
    silence.add_argument(
        "--all", dest="every", action="store_true", help="mute every alert (needed when no rule, service or route)"
    )
    silence.add_argument("--for", dest="duration", required=True, help='how long, e.g. "30m", "2h", "1d"')
    for parser in (ack, silence):
        parser.add_argument("--service", default=None, help="the alert's service (default: none / any)")
        parser.add_argument("--route", default=None, help="the alert's route (default: none / any)")
        parser.add_argument("--author", default=_user(), help="who says so (default: the login name)")
        parser.add_argument("--comment", default=None, help="why")
    unsilence = actions.add_parser("unsilence", help="end a silence now", parents=shared)
    unsilence.add_argument("id", type=int, help="the silence's id (from `alerts list`)")


def _shared_options(*, defaults: bool) -> argparse.ArgumentParser:
    """``--url``, ``--token`` and ``--json``, which ``alerts`` takes before or after its action. ``defaults``:
    with their defaults (the ``alerts`` parser's), else with none (the actions'), so that only a value given
    after the action replaces one given before it."""
    parser = argparse.ArgumentParser(add_help=False)

    def default(value: object) -> Any:
        return value if defaults else argparse.SUPPRESS

    url_help = f"the collector's HTTP address (default {DEFAULT_URL})"
    parser.add_argument("--url", default=default(DEFAULT_URL), help=url_help)
    variables = f"{env.RAGTRACE_COLLECTOR_ADMIN_TOKEN}, else {env.RAGTRACE_COLLECTOR_TOKEN}"
    token_help = f"its admin token, when it has one (or {variables})"
    parser.add_argument("--token", default=default(None), help=token_help)
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="print the API's JSON answer as it is"
    )
    return parser


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in a bare container
        return None


def _when(ns: int | None) -> str:
    if ns is None:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _scope(item: dict[str, Any]) -> str:
    parts = [f"{key}={item[key]}" for key in ("service", "route") if item.get(key) is not None]
    return ", ".join(parts) or "all"


def _print_listing(answer: dict[str, Any]) -> None:
    groups, silences = answer.get("groups", []), answer.get("silences", [])
    if not groups:
        print("no alert groups yet (the watcher has not evaluated any rule over scored records)")
    for group in groups:
        notes = []
        if group.get("ack"):
            ack = group["ack"]
            who = f" by {ack['author']}" if ack.get("author") else ""
            notes.append(f"acknowledged{who} at {_when(ack.get('time_ns'))}")
        if group.get("silenced_by"):
            notes.append("silenced by " + ", ".join(f"#{i}" for i in group["silenced_by"]))
        tail = f" [{'; '.join(notes)}]" if notes else ""
        print(f"{group['state']:<8} {group['rule']} ({_scope(group)}) since {_when(group['since_ns'])}{tail}")
        if group.get("message"):
            print(f"         {group['message']}")
    for item in silences:
        rule = item.get("rule") or "every rule"
        who = f" by {item['author']}" if item.get("author") else ""
        why = f": {item['comment']}" if item.get("comment") else ""
        print(f"silence #{item['id']} {rule} ({_scope(item)}) until {_when(item['ends_ns'])}{who}{why}")


def run_alert_command(args: argparse.Namespace) -> int:
    """Run ``alerts <action>``; return the exit status."""
    token = args.token or env.read_str(env.RAGTRACE_COLLECTOR_ADMIN_TOKEN) or env.read_str(env.RAGTRACE_COLLECTOR_TOKEN)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    base = args.url.rstrip("/")
    request: tuple[str, str, dict[str, Any] | None]
    if args.action == "list":
        request = ("GET", "/api/alerts", None)
    elif args.action == "ack":
        body = {"rule": args.rule, "service": args.service, "route": args.route, "author": args.author,
                "comment": args.comment}  # fmt: skip
        request = ("POST", "/api/alerts/ack", body)
    elif args.action == "silence":
        body = {"rule": args.rule, "service": args.service, "route": args.route, "duration": args.duration,
                "author": args.author, "comment": args.comment, "all": args.every}  # fmt: skip
        request = ("POST", "/api/silences", body)
    else:
        request = ("DELETE", f"/api/silences/{args.id}", None)
    method, path, payload = request
    try:
        response = httpx.request(method, base + path, json=payload, headers=headers, timeout=30.0)
    except httpx.HTTPError as exc:
        print(f"ragtrace-collector alerts: cannot reach {base} ({exc}); check --url", file=sys.stderr)
        return 1
    try:
        answer = response.json()
    except ValueError:
        answer = {"error": response.text.strip()}
    if response.status_code >= 400:
        error = answer.get("error") if isinstance(answer, dict) else None
        if response.status_code == 401:
            error = f"{base} needs its token: pass --token or set {env.RAGTRACE_COLLECTOR_TOKEN}"
        print(f"ragtrace-collector alerts: {error or response.reason_phrase} ({response.status_code})", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(answer, indent=2))
    elif args.action == "list":
        _print_listing(answer)
    elif args.action == "ack":
        ack = answer["ack"]
        print(f"acknowledged {ack['rule']} ({_scope(ack)}), the alert that started {_when(ack['episode_ns'])}")
    else:
        item = answer["silence"]
        verb = "silenced" if args.action == "silence" else "ended silence"
        print(
            f"{verb} #{item['id']}: {item.get('rule') or 'every rule'} ({_scope(item)}) until {_when(item['ends_ns'])}"
        )
    return 0
