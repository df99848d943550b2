"""ragtrace-collector: receive OTLP, store spans and scores in SQLite, watch drift, alert."""

__version__ = "0.1.0"

__all__ = ["__version__"]
