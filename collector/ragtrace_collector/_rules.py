"""Alert rules: a TOML file (stdlib ``tomllib``) parsed into frozen values, validated at load time.

A rules file has top-level ``interval``, ``renotify``, ``keep_firing_for`` and ``no_data_after`` (the last
three are defaults each rule may override), a list of ``[[sinks]]`` and a list of ``[[rules]]``;
``default_rules.toml`` beside this module is used when no file is given and is the annotated example. The
values it is parsed into live in ``_rule_types.py``; each table is read with ``_rule_table.Table``, so every
mistake raises ``ConfigurationError`` naming the file, the rule and the key, and saying how to fix it, and a
misspelt key is an error.
``docs/alerts.md`` is the reference.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final, get_args

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib

from ragtrace import ConfigurationError
from ragtrace_collector._rule_table import NS_PER_S, Table
from ragtrace_collector._rule_types import (
    _DRIFT,
    _THRESHOLD,
    DEFAULT_KEEP_FIRING_FOR_NS,
    DEFAULT_NO_DATA_AFTER_NS,
    DEFAULT_SPIKE,
    AgreementParams,
    AgreementStatistic,
    AlertRule,
    DriftMethod,
    DriftParams,
    GroupBy,
    Params,
    RuleKind,
    RuleSet,
    SinkConfig,
    SpikeParams,
    ThresholdParams,
)

_NAME: Final = re.compile(r"^[A-Za-z0-9_.:-]+$")


@dataclass(frozen=True, slots=True)
class _Timing:
    """The file-wide timings every rule takes unless it sets its own."""

    renotify_ns: int
    keep_firing_for_ns: int
    no_data_after_ns: int

    @classmethod
    def read(cls, table: Table) -> _Timing:
        return cls(
            renotify_ns=table.duration("renotify", 4 * 3600 * NS_PER_S),
            # 0 is allowed: it turns the hold off (the state follows the detector at once).
            keep_firing_for_ns=table.duration("keep_firing_for", DEFAULT_KEEP_FIRING_FOR_NS, allow_zero=True),
            no_data_after_ns=table.duration("no_data_after", DEFAULT_NO_DATA_AFTER_NS, allow_zero=True),
        )


def _parse_sink(data: object, index: int, source: str) -> SinkConfig:
    # The sinks' registry is the one list of types (it imports this module, hence the late import).
    from ragtrace_collector._alerts._sinks import sink_types

    table = Table(data, f"{source}: sinks[{index}]")
    kind = table.choice("type", None, sink_types())
    name = table.string("name", kind) or kind
    if not _NAME.match(name):
        raise ConfigurationError(f"{table.where}: `name` = {name!r}; use letters, digits, '_', '-', '.' or ':'")
    url = table.string("url")
    url_env = table.string("url_env")
    timeout = table.number("timeout", 5.0, low=0.001)
    retries = table.integer("retries", 3)
    headers_raw = table.get("headers", {})
    if not isinstance(headers_raw, Mapping) or not all(isinstance(v, str) for v in headers_raw.values()):
        raise ConfigurationError(
            f'{table.where}: `headers` must be a table of strings, e.g. {{ Authorization = "..." }}'
        )
    table.finish()
    if kind == "webhook":
        if url is None and url_env is not None:
            url = os.environ.get(url_env)
            if not url:
                raise ConfigurationError(
                    f"{table.where}: `url_env` names {url_env}, which is not set; export it or give `url`"
                )
        if url is None:
            raise ConfigurationError(f"{table.where}: a webhook needs `url` (or `url_env` naming a variable)")
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"{table.where}: `url` = {url!r} must start with http:// or https://")
    elif url is not None or url_env is not None:
        raise ConfigurationError(f'{table.where}: `url` only applies to type = "webhook"; remove it')
    return SinkConfig(
        name=name,
        type=kind,
        url=url,
        timeout=timeout,
        retries=retries,
        headers=tuple(sorted((str(k), str(v)) for k, v in headers_raw.items())),
    )


def _parse_params(table: Table, kind: RuleKind) -> Params:
    if kind == "agreement":
        table.require("threshold", "give the agreement below which it fires, e.g. threshold = 0.7")
        agreement = AgreementParams(
            threshold=table.number("threshold", None, low=0.0, high=1.0),
            warning=table.number("warning", None, low=0.0, high=1.0),
            statistic=table.choice("statistic", "balanced_accuracy", get_args(AgreementStatistic)),
            window_ns=table.duration("window", 7 * 86400 * NS_PER_S),
            min_reviews=table.integer("min_reviews", 20, low=2),
        )
        if agreement.warning is not None and agreement.warning < agreement.threshold:
            raise ConfigurationError(
                f"{table.where}: warning = {agreement.warning:g} is below threshold = {agreement.threshold:g}; "
                "the warning comes first: make warning >= threshold"
            )
        return agreement
    if kind == "threshold":
        table.require("threshold", "give the level that raises ALERT, e.g. threshold = 0.5")
        params: Params = ThresholdParams(
            threshold=table.number("threshold", None),
            warning=table.number("warning", None),
            window_ns=table.duration("window", _THRESHOLD.window_ns),
            min_records=table.integer("min_records", 20, low=1),
        )
        return params
    if kind == "spike":
        d = DEFAULT_SPIKE
        spike = SpikeParams(
            cutoff=table.number("cutoff", d.cutoff),
            shift=table.number("shift", d.shift, low=1.0001),
            h=table.number("h", d.h, low=0.001),
            warning_h=table.number("warning_h", d.warning_h, low=0.001),
            min_rate=table.number("min_rate", d.min_rate, low=1e-6, high=0.5),
            window_ns=table.duration("window", d.window_ns),
            max_records=table.integer("max_records", d.max_records, low=1),
            baseline_ns=table.duration("baseline", d.baseline_ns),
            baseline_rate=table.number("baseline_rate", None, low=1e-6, high=0.5),
            min_records=table.integer("min_records", d.min_records, low=1),
            min_baseline=table.integer("min_baseline", d.min_baseline, low=1),
        )
        if spike.warning_h > spike.h:
            raise ConfigurationError(
                f"{table.where}: warning_h = {spike.warning_h:g} is above h = {spike.h:g}; make warning_h <= h"
            )
        return spike
    method = table.choice("method", "psi", get_args(DriftMethod))
    drift = DriftParams(
        method=method,
        warning=table.number("warning", None, low=0.0),
        alert=table.number("alert", None, low=0.0),
        window_ns=table.duration("window", _DRIFT.window_ns),
        baseline_ns=table.duration("baseline", _DRIFT.baseline_ns),
        min_records=table.integer("min_records", 50, low=1),
        bins=table.integer("bins", 10, low=2),
    )
    if drift.warning is not None and drift.alert is not None:
        worse = drift.alert < drift.warning if method == "psi" else drift.alert > drift.warning
        if worse:
            side = "above" if method == "psi" else "below"
            raise ConfigurationError(
                f"{table.where}: with method = {method!r} `alert` must be {side} or equal to `warning`; swap them"
            )
    return drift


def _parse_rule(data: object, index: int, source: str, defaults: _Timing, sink_names: set[str]) -> AlertRule:
    where = f"{source}: rules[{index}]"
    if isinstance(data, Mapping) and isinstance(data.get("name"), str):
        where = f"{where} ({data['name']})"
    table = Table(data, where)
    name = table.require("name", 'give each rule a unique name, e.g. name = "faithfulness-low"')
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigurationError(f"{where}: `name` = {name!r}; use letters, digits, '_', '-', '.' or ':'")
    kind = table.require("kind", 'say which detector: kind = "threshold", "spike", "drift" or "agreement"')
    if kind not in get_args(RuleKind):
        raise ConfigurationError(f"{where}: `kind` = {kind!r}; use one of threshold, spike, drift, agreement")
    if kind == "agreement":
        # The reviews are of the answer's groundedness, which the judge's faithfulness measures (_agreement).
        metric = table.get("metric", "faithfulness")
        if metric != "faithfulness":
            raise ConfigurationError(
                f"{where}: `metric` = {metric!r}; an agreement rule compares people's reviews with the judge's "
                "faithfulness (else one minus its hallucination): leave `metric` out"
            )
    else:
        metric = table.require("metric", 'name the metric, e.g. metric = "faithfulness"')
    if not isinstance(metric, str) or not _NAME.match(metric):
        raise ConfigurationError(f"{where}: `metric` = {metric!r} is not a metric name")
    params = _parse_params(table, kind)
    sinks_raw = table.get("sinks")
    sinks: tuple[str, ...] | None = None
    if sinks_raw is not None:
        if not isinstance(sinks_raw, list) or not all(isinstance(s, str) for s in sinks_raw):
            raise ConfigurationError(f'{where}: `sinks` must be a list of sink names, e.g. ["webhook"]')
        missing = [s for s in sinks_raw if s not in sink_names]
        if missing:
            known = ", ".join(sorted(sink_names)) or "none defined"
            raise ConfigurationError(f"{where}: `sinks` names {', '.join(missing)}, not in [[sinks]] (known: {known})")
        sinks = tuple(sinks_raw)
    timing = _Timing(
        renotify_ns=table.duration("renotify", defaults.renotify_ns),
        keep_firing_for_ns=table.duration("keep_firing_for", defaults.keep_firing_for_ns, allow_zero=True),
        no_data_after_ns=table.duration("no_data_after", defaults.no_data_after_ns, allow_zero=True),
    )
    rule = AlertRule(
        name=name,
        kind=kind,
        metric=metric,
        params=params,
        service=table.string("service"),
        route=table.string("route"),
        group_by=table.choice("group_by", "service", get_args(GroupBy)),
        renotify_ns=timing.renotify_ns,
        sinks=sinks,
        keep_firing_for_ns=timing.keep_firing_for_ns,
        no_data_after_ns=timing.no_data_after_ns,
    )
    table.finish()
    return rule


def parse_rules(text: str, *, source: str = "<rules>") -> RuleSet:
    """Parse a rules file's text. Raises ``ConfigurationError`` naming what to fix."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{source}: not valid TOML ({exc}); check the quoting and brackets there") from exc
    top = Table(data, source)
    interval_ns = top.duration("interval", 60 * NS_PER_S)
    defaults = _Timing.read(top)
    sinks_raw = top.get("sinks", [{"type": "log"}])
    rules_raw = top.require("rules", "add at least one [[rules]] table (see default_rules.toml)")
    top.finish()
    if not isinstance(sinks_raw, list) or not sinks_raw:
        raise ConfigurationError(f"{source}: `sinks` must be one or more [[sinks]] tables")
    if not isinstance(rules_raw, list) or not rules_raw:
        raise ConfigurationError(f"{source}: `rules` must be one or more [[rules]] tables")
    sinks = tuple(_parse_sink(s, i, source) for i, s in enumerate(sinks_raw))
    sink_names = [s.name for s in sinks]
    if len(set(sink_names)) != len(sink_names):
        raise ConfigurationError(f"{source}: two sinks share a name ({', '.join(sink_names)}); give each a `name`")
    rules = tuple(_parse_rule(r, i, source, defaults, set(sink_names)) for i, r in enumerate(rules_raw))
    names = [r.name for r in rules]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigurationError(f"{source}: rule names must be unique; rename {', '.join(duplicates)}")
    return RuleSet(rules=rules, sinks=sinks, interval_ns=interval_ns, source=source)


def default_rules_text() -> str:
    """The text of the packaged ``default_rules.toml``."""
    return resources.files("ragtrace_collector").joinpath("default_rules.toml").read_text(encoding="utf-8")


def load_rules(path: str | os.PathLike[str] | None = None) -> RuleSet:
    """Load a rules file, or the packaged defaults when ``path`` is None."""
    if path is None:
        return parse_rules(default_rules_text(), source="default_rules.toml")
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigurationError(f"rules file {file} does not exist; check the path given with --rules") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"rules file {file} cannot be read ({exc}); make it a readable UTF-8 file") from exc
    return parse_rules(text, source=str(file))
