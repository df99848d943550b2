"""The one settings resolver: the argument, else the RAGTRACE_* variable, else the default; then one check."""

from __future__ import annotations

import gc
import os
import warnings
import weakref
from collections.abc import Callable

import pytest

from ragtrace import _fork
from ragtrace import _settings as settings
from ragtrace._exceptions import ConfigurationError

QUEUE = settings.whole_number("queue_size", "RAGTRACE_TEST_QUEUE", default=2048, minimum=1)
HOLD = settings.seconds("hold_timeout", "RAGTRACE_TEST_HOLD", default=30.0)
RATE = settings.rate("rate", "RAGTRACE_TEST_RATE", default=0.1)
BUDGET = settings.dollars("budget_usd_per_day", "RAGTRACE_TEST_BUDGET")


def test_the_argument_wins_over_the_variable_which_wins_over_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGTRACE_TEST_QUEUE", raising=False)
    assert QUEUE.resolve(None) == 2048
    monkeypatch.setenv("RAGTRACE_TEST_QUEUE", "16")
    assert QUEUE.resolve(None) == 16
    assert QUEUE.resolve(4) == 4
    assert BUDGET.resolve(None) is None


def test_a_bad_argument_names_the_argument_and_the_fix() -> None:
    with pytest.raises(ConfigurationError, match=r"queue_size=0 is invalid: pass a whole number >= 1"):
        QUEUE.resolve(0)
    with pytest.raises(ConfigurationError, match=r"rate=True is invalid: pass a number between 0 and 1"):
        RATE.resolve(True)
    with pytest.raises(ConfigurationError, match=r"hold_timeout=inf is invalid: pass a finite number of seconds"):
        HOLD.resolve(float("inf"))


def test_a_bad_variable_warns_naming_the_variable_and_the_default_is_used(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv("RAGTRACE_TEST_HOLD", "inf")
    assert HOLD.resolve(None) == HOLD.default
    (message,) = warned("RAGTRACE_TEST_HOLD")
    assert "RAGTRACE_TEST_HOLD=inf is invalid: set it to a finite number" in message
    monkeypatch.setenv("RAGTRACE_TEST_QUEUE", "many")
    assert QUEUE.resolve(None) == QUEUE.default
    assert len(warned("RAGTRACE_TEST_QUEUE")) == 1


def test_check_names_a_value_that_has_no_variable_of_its_own() -> None:
    assert RATE.check("metric_rates['faithfulness']", 1) == 1.0
    with pytest.raises(ConfigurationError, match=r"metric_rates\['faithfulness'\]=2 is invalid"):
        RATE.check("metric_rates['faithfulness']", 2)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_the_fork_registry_renews_an_owner_in_the_child_and_holds_it_weakly() -> None:
    class Owner:
        pass

    renewed: list[Owner] = []
    owner = Owner()
    _fork.at_fork_in_child_of(owner, renewed.append)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # forking a process with threads
        pid = os.fork()
    if pid == 0:
        os._exit(0 if renewed == [owner] else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert renewed == []  # the parent runs nothing
    ref = weakref.ref(owner)
    del owner
    gc.collect()
    assert ref() is None
    _fork.at_fork_in_child_of(Owner(), renewed.append)  # registering drops the entries of owners that are gone
    assert not any(isinstance(h, tuple) and h[0]() is None and h[1] == renewed.append for h in _fork._hooks[:-1])
