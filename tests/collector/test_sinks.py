"""Alert sinks are registered by type: a misspelt or unknown type stops the start with the known types named."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragtrace_collector._alerts import LogSink, StdoutSink, Watcher, WebhookSink, build_sinks, sink_types
from ragtrace_collector._rule_types import RuleSet, SinkConfig
from ragtrace_collector._rules import parse_rules

from ragtrace.environment_variables import ConfigurationError


def test_the_built_in_types_build_their_sinks() -> None:
    sinks = build_sinks(
        [
            SinkConfig(name="log", type="log"),
            SinkConfig(name="out", type="stdout"),
            SinkConfig(name="hook", type="webhook", url="http://127.0.0.1:9/hook"),
        ]
    )
    try:
        assert [type(s) for s in sinks] == [LogSink, StdoutSink, WebhookSink]
        assert [s.name for s in sinks] == ["log", "out", "hook"]
    finally:
        for sink in sinks:
            sink.close(0.1)
    assert sink_types() == ("webhook", "log", "stdout")


def test_an_unknown_type_is_a_configuration_error_naming_the_known_types() -> None:
    # Before the registry a type nobody handled (a typo in code, a type added to the parser only)
    # silently became a log sink.
    with pytest.raises(ConfigurationError, match=r"sink 'pager': type 'stdot' is not a sink type; use one of webhook"):
        build_sinks([SinkConfig(name="pager", type="stdot")])


def test_a_watcher_with_an_unknown_sink_type_does_not_start(tmp_path: Path) -> None:
    rules = RuleSet(rules=(), sinks=(SinkConfig(name="pager", type="pagerduty"),))
    with pytest.raises(ConfigurationError, match=r"use one of webhook, log, stdout"):
        Watcher(tmp_path / "c.db", rules=rules)


def test_a_rules_file_with_a_misspelt_type_names_the_registered_types() -> None:
    with pytest.raises(ConfigurationError, match=r"`type` = 'stdot'; use one of webhook, log, stdout"):
        parse_rules(
            '[[sinks]]\ntype = "stdot"\n\n[[rules]]\nname = "low"\nkind = "threshold"\nmetric = "faithfulness"\n'
            'window = "15m"\nthreshold = 0.7\n'
        )
