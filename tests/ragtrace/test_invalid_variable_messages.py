"""A wrong ``RAGTRACE_*`` variable warns with the value actually used instead: the documented default, or for a
variable that guards privacy or spending, its safe value said as such (issue 29, item 1)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import ragtrace
from ragtrace import _options
from ragtrace._capture._capture_settings import CaptureSettings
from ragtrace._foreign._join_settings import JoinSettings
from ragtrace._sampling._sampler import RATE, THROTTLE


def test_configure_names_the_documented_default_and_the_safe_value(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    # The reproduction: configure() with the three variables wrong, the warning text as a user sees it.
    monkeypatch.setenv("RAGTRACE_QUEUE_SIZE", "lots")
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "abc")
    monkeypatch.setenv("RAGTRACE_CAPTURE_CONTENT", "maybe")
    handle = ragtrace.configure(
        service_name="x", endpoint="http://127.0.0.1:4318", judge="offline", export_metrics=False, set_global=False
    )
    try:
        assert handle.processor.queue_size == 2048
        assert handle.processor.sampler.rate == 0.1
    finally:
        handle.shutdown(timeout_millis=1000)
    assert warned("RAGTRACE_QUEUE_SIZE") == [
        "ragtrace: RAGTRACE_QUEUE_SIZE='lots' is invalid: not an integer: set it to a whole number; "
        "using the default (2048)"
    ]
    assert warned("RAGTRACE_SAMPLE_RATE") == [
        "ragtrace: RAGTRACE_SAMPLE_RATE='abc' is invalid: not a number: set it to e.g. 0.5; using the default (0.1)"
    ]
    assert warned("RAGTRACE_CAPTURE_CONTENT") == [
        "ragtrace: RAGTRACE_CAPTURE_CONTENT='maybe' is invalid: not a boolean: set it to 'true' or 'false'; "
        "falling back to the safe value (off)"
    ]


def test_no_warning_says_none(monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]) -> None:
    monkeypatch.setenv("RAGTRACE_QUEUE_SIZE", "0")
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "7")
    monkeypatch.setenv("RAGTRACE_HOLD_TIMEOUT", "x")
    assert _options.QUEUE_SIZE.resolve(None) == 2048
    assert RATE.resolve(None) == 0.1
    assert _options.HOLD_TIMEOUT.resolve(None) == 30.0
    messages = warned("RAGTRACE_QUEUE_SIZE") + warned("RAGTRACE_SAMPLE_RATE") + warned("RAGTRACE_HOLD_TIMEOUT")
    assert [m.rsplit("; ", 1)[1] for m in messages] == [
        "using the default (2048)",
        "using the default (0.1)",
        "using the default (30.0)",
    ]


def test_a_guarding_variable_says_it_falls_back_to_the_safe_value(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv("RAGTRACE_THROTTLE_PER_MINUTE", "plenty")
    monkeypatch.setenv("RAGTRACE_RECOGNIZE", "maybe")
    monkeypatch.setenv("RAGTRACE_CAPTURE_CONTENT", "perhaps")
    assert THROTTLE.resolve(None) == 0
    assert JoinSettings.resolve().recognize is False
    assert CaptureSettings.from_env().capture_content is False
    for variable, safe in [
        ("RAGTRACE_THROTTLE_PER_MINUTE", "0"),
        ("RAGTRACE_RECOGNIZE", "off"),
        ("RAGTRACE_CAPTURE_CONTENT", "off"),
    ]:
        (message,) = warned(variable)
        assert message.endswith(f"; falling back to the safe value ({safe})"), message
