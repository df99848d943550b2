"""Test-run settings shared by every test module."""

import logging
from collections.abc import Callable

import pytest
from hypothesis import settings

# Property tests keep no example database in the checkout: a run is a function of its seed and code.
settings.register_profile("ragtrace", database=None)
settings.load_profile("ragtrace")


@pytest.fixture
def warned(caplog: pytest.LogCaptureFixture) -> Callable[[str], list[str]]:
    """``warned(variable)``: the WARNINGs ragtrace logged so far about ``variable``'s value being invalid
    (each variable and value is reported once per process, so the record of those is cleared first)."""
    from ragtrace import environment_variables

    environment_variables._warned.clear()
    caplog.set_level(logging.WARNING, logger="ragtrace")

    def check(variable: str) -> list[str]:
        found = (r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
        return [m for m in found if f"{variable}=" in m and "invalid" in m]

    return check
