"""What bounds SQLite ingest: each stage of storing a batch timed alone, on one core, in one run.

bench/ingest.py measures spans per second stored end to end (HTTP, decoding, the commit). This one takes its
workload (batches of 512 RAG spans, 5 chunks of 1 KB each) and times, in this process and one after another:

* ``parse``: protobuf bytes to the OTLP message (the C++ upb parser);
* ``bound``: the quick upper bound of the decoded size the receivers take first (``_otlp/_cost.py``);
* ``cost``: the exact decoded-size walk, which runs only when the quick bound does not fit the budget;
* ``decode``: protobuf bytes to the store's rows (``decode_protobuf``: parse, flatten, RAG records, scores);
* ``write``: those rows committed to a SQLite file (``Store.write``: one transaction, upserts, WAL);
* ``write, no indexes``: the same into a file whose secondary indexes were dropped (what the indexes cost);
* ``write, no text index``: the same into a file without the FTS5 trigram index of queries and answers (dropped
  as docs/collector.md says), what text search costs the writer;
* ``write, no metadata rows``: the same with the store's ``record_metadata`` rows not written (what the
  ``meta=`` filter's rows cost the writer).

Each stage's spans per second on one core, and each stage's share of a batch's time, are printed; the sum of
bound, decode and write is the one-core ceiling, and with decoding in other processes (``--decode-processes``) the
ceiling on N cores is bounded by the single writer: ``write`` alone.

    .venv/bin/python bench/ingest_bound.py [--batches 12]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from ragtrace_collector._otlp import decode_protobuf  # noqa: E402
from ragtrace_collector._otlp._cost import decoded_cost  # noqa: E402
from ragtrace_collector._store import Store, metadata  # noqa: E402

from bench.ingest import SPANS_PER_BATCH, otlp_bodies  # noqa: E402


def _timed(stage: Callable[[bytes, int], object], bodies: list[bytes]) -> float:
    """Median seconds of ``stage`` over the bodies (each with its index)."""
    seconds = []
    for i, body in enumerate(bodies):
        start = time.perf_counter()
        stage(body, i)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=12, help="batches of 512 spans per stage (default 12)")
    args = parser.parse_args()
    bodies = otlp_bodies(args.batches)
    batches = [decode_protobuf(body, time.time_ns()) for body in bodies]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "indexed.db")
        bare = Store(Path(tmp) / "bare.db")
        unsearched = Store(Path(tmp) / "unsearched.db")
        unlabelled = Store(Path(tmp) / "unlabelled.db")
        for trigger in ("ai", "ad", "au"):
            unsearched.db.execute(f"DROP TRIGGER rag_records_fts_{trigger}")
        unsearched.db.execute("DROP TABLE rag_records_fts")
        for name in [row[0] for row in bare.db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")]:
            if not name.startswith("sqlite_autoindex"):  # the keys' own indexes stay: upserts need them
                bare.db.execute(f"DROP INDEX {name}")
        stages: dict[str, float] = {
            "parse": _timed(lambda body, _: ExportTraceServiceRequest.FromString(body), bodies),
            "bound": _timed(lambda body, _: decoded_cost(body, export="traces", as_json=False, quick=True), bodies),
            "cost": _timed(lambda body, _: decoded_cost(body, export="traces", as_json=False), bodies),
            "decode": _timed(lambda body, _: decode_protobuf(body, time.time_ns()), bodies),
            "write": _timed(lambda _, i: store.write(batches[i]), bodies),
            "write, no indexes": _timed(lambda _, i: bare.write(batches[i]), bodies),
            "write, no text index": _timed(lambda _, i: unsearched.write(batches[i]), bodies),
        }
        fill = metadata.fill
        metadata.fill = lambda conn, span_ids=None: None  # type: ignore[assignment]
        try:
            stages["write, no metadata rows"] = _timed(lambda _, i: unlabelled.write(batches[i]), bodies)
        finally:
            metadata.fill = fill
        unlabelled.close()
        store.close()
        bare.close()
        unsearched.close()
    batch_mb = statistics.mean(len(b) for b in bodies) / 1e6
    print(f"{args.batches} batches of {SPANS_PER_BATCH} RAG spans ({batch_mb:.2f} MB of protobuf each), one core")
    one_core = stages["bound"] + stages["decode"] + stages["write"]
    print(f"{'stage':<20} {'ms/batch':>9} {'spans/s':>9} {'share':>7}")
    for name, seconds in stages.items():
        share = f"{seconds / one_core:6.0%}" if name in ("bound", "decode", "write") else ""
        print(f"{name:<20} {seconds * 1000:9.1f} {SPANS_PER_BATCH / seconds:9.0f} {share:>7}")
    print(f"one-core ceiling (bound + decode + write): {SPANS_PER_BATCH / one_core:,.0f} spans/s")
    print(
        f"ceiling with decoding in other processes (the writer alone): {SPANS_PER_BATCH / stages['write']:,.0f} spans/s"
    )
    print(f"ratio write / write without secondary indexes: {stages['write'] / stages['write, no indexes']:.2f}x")
    print(f"ratio write / write without the text index: {stages['write'] / stages['write, no text index']:.2f}x")
    print(f"ratio write / write without the metadata rows: {stages['write'] / stages['write, no metadata rows']:.2f}x")
    print(f"ratio decode / parse: {stages['decode'] / stages['parse']:.2f}x")


if __name__ == "__main__":
    main()
