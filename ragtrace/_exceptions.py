"""ragtrace's own exceptions, in one place.

``ConfigurationError`` is public as ``ragtrace.ConfigurationError`` (and, as before, importable from
``ragtrace.environment_variables``). The judge's runtime errors (``JudgeError`` and its kinds) live with
the ``Judge`` protocol in ``ragtrace.judges``: they are part of that contract, and metrics turn them into
absent scores rather than letting them reach the app.
"""

from __future__ import annotations

__all__ = ["ConfigurationError"]


class ConfigurationError(ValueError):
    """A setting is wrong. The message names the setting and how to fix it."""
