"""ragtrace-collector: receive OTLP, store spans and scores in SQLite, watch drift, alert.

Run it with ``ragtrace-collector serve --db ragtrace.db``; embed it with ``Collector(CollectorConfig(...))``.
The public API is exactly ``__all__``; everything in a ``_module`` is private and may change.
"""

from ragtrace_collector._forward import Forwarder
from ragtrace_collector._otlp import Batch, OtlpDecodeError, decode_json, decode_protobuf
from ragtrace_collector._scoring import ServerScorer
from ragtrace_collector._server import Collector, CollectorConfig
from ragtrace_collector._store import Store, StoreError

__version__ = "0.1.0"

__all__ = [
    "Batch",
    "Collector",
    "CollectorConfig",
    "Forwarder",
    "OtlpDecodeError",
    "ServerScorer",
    "Store",
    "StoreError",
    "__version__",
    "decode_json",
    "decode_protobuf",
]
