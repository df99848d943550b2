"""The pages' HTML templates (``templates/``, Jinja2) and how they are rendered: ``render`` for a part (a chart, the
trace, a records row) or the report file, ``macro`` for a template's macro (the alert controls), ``render_page``
for a whole page in the shared frame (``templates/layout.html``). Every page is one: no page writes HTML by hand.

Autoescape is on for every template: a value is HTML-escaped where it is put, unless it is ``Markup`` (HTML another
template or ``sparkline`` made, wrapped by the code that hands it over), so a span's text can only ever show as
text. Undefined names are errors, not
empty strings (a misspelt name fails a test instead of leaving a blank on the page). Templates are read once from
the package's files (``ragtrace_collector/_triage/templates``), never from anywhere a request names.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from ragtrace_collector._triage._assets import asset_url
from ragtrace_collector._triage._scope import RANGES, Scope
from ragtrace_collector._triage._time import fmt_time

__all__ = ["NAV", "Markup", "escape", "frame", "macro", "render", "render_page"]

NAV = (
    ("/", "overview"),
    ("/records", "records"),
    ("/review", "review"),
    ("/agreement", "agreement"),
    ("/costs", "cost and coverage"),
)
"""The pages the navigation links, each with the scope of the page it is on."""


@functools.cache
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.globals.update(asset_url=asset_url)
    env.filters.update(time=fmt_time)
    return env


def render(name: str, /, **context: Any) -> str:
    """The template ``name`` with ``context``, as HTML. A plain ``str``, not ``Markup``: ``Markup + str`` escapes the
    ``str``, which would print the HTML of a page built by concatenation; a template is given it as ``Markup(...)``,
    saying where it came from."""
    return _environment().get_template(name).render(**context)


def macro(template: str, name: str, /, *args: Any) -> str:
    """The macro ``name`` of ``template`` called with ``args``, as HTML (a plain ``str``, as ``render``'s)."""
    return str(getattr(_environment().get_template(template).module, name)(*args))


def render_page(
    name: str,
    /,
    *,
    title: str,
    scope: Scope | None = None,
    services: Sequence[str] = (),
    here: str | None = None,
    scripts: Sequence[str] = (),
    **context: Any,
) -> str:
    """A whole page: the template ``name`` (which extends ``layout.html``) in the frame ``frame`` describes; the
    template has ``scope`` (``Scope()`` when None) and ``context`` too."""
    scope = scope if scope is not None else Scope()
    return render(name, frame=frame(title, scope, services, here, scripts), scope=scope, **context)


def frame(
    title: str,
    scope: Scope | None = None,
    services: Sequence[str] = (),
    here: str | None = None,
    scripts: Sequence[str] = (),
) -> dict[str, Any]:
    """What the frame shows: ``title``; ``scope``, the page's time range and service, which every link of the
    navigation carries and the picker shows (``services``: its choices); ``here``, the path of a page of the
    navigation (marked as the current one, and where the picker goes; none outside the navigation: a record, an
    alert, an error, whose links carry the scope they came with); ``scripts``, the static scripts it runs
    (``_assets`` names, after ``pages.js``, loaded after the page is read, in order)."""
    scope = scope if scope is not None else Scope()
    return {
        "title": title,
        "stylesheet": asset_url("pages.css"),
        "scripts": [asset_url(name) for name in ("pages.js", *scripts)],
        "nav": [{"href": scope.link(path), "name": label, "current": path == here} for path, label in NAV],
        "picker": _picker(scope, services, here),
    }


def _picker(scope: Scope, services: Sequence[str], here: str | None) -> dict[str, Any] | None:
    """The scope picker's choices: a time range and a service, applied to the page it is on (``here``)."""
    if here is None:
        return None
    fixed = scope.range is None and (scope.since_ns is not None or scope.until_ns is not None)
    # A period the URL fixed (since=, until=) is the first choice, kept by hidden fields; else all time.
    first = f"{fmt_time(scope.since_ns) or 'start'} to {fmt_time(scope.until_ns) or 'now'}" if fixed else "all time"
    names = list(services)
    if scope.service and scope.service not in names:
        names.insert(0, scope.service)
    return {
        "action": here,
        "ranges": [
            {"value": value, "label": label, "selected": value == (scope.range or "")}
            for value, label in [("", first), *((key, f"last {key}") for key in RANGES)]
        ],
        "services": [{"value": name, "selected": name == scope.service} for name in names],
        "kept": [
            (key, value)
            for key, value in (("since", scope.since_ns), ("until", scope.until_ns))
            if value is not None and fixed
        ],
    }
