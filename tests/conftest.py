"""Test-run settings shared by every test module."""

from hypothesis import settings

# Property tests keep no example database in the checkout: a run is a function of its seed and code.
settings.register_profile("ragtrace", database=None)
settings.load_profile("ragtrace")
