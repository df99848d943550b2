"""Which judge ``default_judge`` builds from the environment (construction only: no call, no model load)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from ragtrace import ConfigurationError
from ragtrace import environment_variables as env
from ragtrace.judges import _default
from ragtrace.judges._default import default_judge, judge_choice
from ragtrace.judges.offline import OfflineJudge

_VARIABLES = (
    env.RAGTRACE_JUDGE,
    env.RAGTRACE_JUDGE_BASE_URL,
    env.RAGTRACE_JUDGE_API_KEY,
    env.RAGTRACE_JUDGE_MODEL,
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in _VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(_default, "_logged", set())


def test_no_key_picks_the_offline_judge() -> None:
    judge = default_judge()
    assert isinstance(judge, OfflineJudge)
    assert judge.name == "offline:minilm-int8"


def test_a_base_url_picks_the_openai_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtrace.judges.openai import OpenAIJudge

    monkeypatch.setenv(env.RAGTRACE_JUDGE_BASE_URL, "http://127.0.0.1:9/v1")
    monkeypatch.setenv(env.RAGTRACE_JUDGE_MODEL, "local-model")
    judge = default_judge()
    assert isinstance(judge, OpenAIJudge)
    assert judge.name == "openai:local-model"


def test_an_openai_key_picks_the_openai_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    assert judge_choice() == ("openai", "OPENAI_API_KEY is set")
    assert default_judge().name.startswith("openai:")


def test_forced_offline_wins_over_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    monkeypatch.setenv(env.RAGTRACE_JUDGE, "Offline")
    assert isinstance(default_judge(), OfflineJudge)


def test_forced_openai_without_key_or_url_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env.RAGTRACE_JUDGE, "openai")
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        default_judge()


def test_an_unknown_variable_choice_warns_and_keeps_everything_in_the_process(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    # "ofline" with a key set must not send the app's content to the API the key is for.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv(env.RAGTRACE_JUDGE, "ofline")
    assert judge_choice()[0] == "offline"
    (message,) = warned(env.RAGTRACE_JUDGE)
    assert "'auto', 'openai', 'offline' or 'tiered'" in message and "using the offline judge" in message
    with pytest.raises(ConfigurationError, match=r"judge='nonsense' is unknown"):
        judge_choice("nonsense")


def test_the_choice_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="ragtrace"):
        default_judge()
        default_judge()
    messages = [r.getMessage() for r in caplog.records if "judge" in r.getMessage()]
    assert messages == [
        "ragtrace scores with the offline:minilm-int8 judge (no OPENAI_API_KEY or RAGTRACE_JUDGE_BASE_URL set)"
    ]
