"""The collector's version, its own module so any part can import it without importing the package's
``__init__`` (which imports most parts): collector/pyproject.toml says the same (tests/test_packaging.py)."""

__version__ = "0.1.0"
