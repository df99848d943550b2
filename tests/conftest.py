"""Test-run settings shared by every test module."""

import logging
import os
import sys
from collections.abc import Callable

import pytest
from hypothesis import settings

# Bytecode is cached whatever PYTHONDONTWRITEBYTECODE says (git ignores __pycache__): without the cache every run
# compiled ragtrace, the collector and each test module again, and pytest rewrote the asserts of each test module
# again, about half of the collection's time (24 s -> 11 s of CPU here); so did every Python process a test starts.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

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
