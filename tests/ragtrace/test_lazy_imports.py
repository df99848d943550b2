"""Importing ragtrace is cheap: the scoring side loads on first use of one of its names, each the object its module
defines (what ``__all__`` lists is tests/test_exported_members.py's)."""

import subprocess
import sys

import pytest

import ragtrace


def test_importing_ragtrace_leaves_the_sdk_and_the_metrics_unloaded_until_used() -> None:
    # A decorated app pays import time for the decorators only (the OpenTelemetry API); the scoring
    # side loads on first use of one of its names.
    code = (
        "import sys, ragtrace\n"
        "heavy = ('opentelemetry.sdk.trace', 'ragtrace.scoring.processor', 'ragtrace.metrics', 'numpy')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "ragtrace.configure\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after = out.splitlines()
    assert before == "[]"
    assert "opentelemetry.sdk.trace" in after and "ragtrace.scoring.processor" in after


def test_a_lazy_name_is_the_object_its_module_defines() -> None:
    from ragtrace import _config, _evaluate
    from ragtrace.metrics import _base
    from ragtrace.scoring import processor as _processor

    assert ragtrace.configure is _config.configure
    assert ragtrace.evaluate is _evaluate.evaluate
    assert ragtrace.ScoringSpanProcessor is _processor.ScoringSpanProcessor
    assert ragtrace.Score is _base.Score


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'configur'"):
        ragtrace.configur  # noqa: B018
