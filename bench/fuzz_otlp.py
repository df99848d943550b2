"""Fuzz the collector's OTLP decoder with at least 100,000 inputs (protobuf and JSON).

Inputs are real exports made by the OpenTelemetry SDK and encoder, then mutated (byte flips, inserts,
deletes, truncation, splices of two bodies, length-prefix corruption) plus pure random bytes and mangled
OTLP/JSON. The decoder must return rows or raise ``OtlpDecodeError``, and the rows it returns must go into
a real store (``Store.write``); anything else is a crash, printed with the input (hex) and counted. Exit
status 1 when there was a crash.

    .venv/bin/python bench/fuzz_otlp.py [--inputs 100000] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragtrace_collector._otlp import OtlpDecodeError, decode_json, decode_protobuf
from ragtrace_collector._store import Store

from tests.collector._spans import SpanFactory, otlp_bytes


def _seeds() -> list[bytes]:
    seeds = []
    for size in (1, 3, 8):
        factory = SpanFactory(service=f"svc{size}")
        for i in range(size):
            rag = factory.rag(
                query=f"question {i} é ✓",
                chunks=[f"chunk {j} " * (j + 1) for j in range(i % 5 + 1)],
                scores={"faithfulness": i / 10, "hallucination": 1 - i / 10},
                decision="evaluated" if i % 2 else None,
                route="/ask" if i % 3 else None,
            )
            if i % 4 == 0:
                factory.carrier(rag, {"context_relevance": 0.5})
        seeds.append(otlp_bytes(factory.all()))
    return seeds


def _mutate(rng: random.Random, seeds: list[bytes]) -> bytes:
    body = bytearray(rng.choice(seeds))
    how = rng.randrange(7)
    if how == 0:  # flip bytes
        for _ in range(rng.randint(1, 8)):
            body[rng.randrange(len(body))] = rng.randrange(256)
    elif how == 1:  # insert bytes
        for _ in range(rng.randint(1, 8)):
            body.insert(rng.randrange(len(body) + 1), rng.randrange(256))
    elif how == 2:  # delete a range
        start = rng.randrange(len(body))
        del body[start : start + rng.randint(1, 64)]
    elif how == 3:  # truncate
        del body[rng.randrange(len(body)) :]
    elif how == 4:  # splice two bodies
        other = rng.choice(seeds)
        body = body[: rng.randrange(len(body))] + other[rng.randrange(len(other)) :]
    elif how == 5:  # corrupt what may be a length prefix into a huge varint
        position = rng.randrange(len(body))
        body[position : position + 1] = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])
    else:  # random bytes
        body = bytearray(rng.randbytes(rng.randint(0, 512)))
    return bytes(body)


def _json_seed(rng: random.Random) -> bytes:
    span: dict[str, object] = {
        "traceId": rng.randbytes(16).hex(),
        "spanId": rng.randbytes(8).hex(),
        "name": "answer",
        "kind": rng.choice([1, 2, "SPAN_KIND_SERVER", "bogus", -3, 1.5]),
        "startTimeUnixNano": rng.choice(["1700000000000000000", 1, -1, "soon", None]),
        "attributes": [
            {"key": "ragtrace.role", "value": {"stringValue": "rag"}},
            {"key": "input.value", "value": rng.choice([{"stringValue": "q"}, {"intValue": "x"}, {}, None, 3])},
            {"key": "ragtrace.eval.faithfulness", "value": {"doubleValue": rng.choice([0.5, "NaN", "x", None])}},
        ],
    }
    for key in list(span):
        if rng.random() < 0.15:
            span[key] = rng.choice([None, [], {}, "", 0, "zz", rng.randbytes(4).hex()])
    doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}
    text = json.dumps(doc)
    if rng.random() < 0.3:
        position = rng.randrange(len(text))
        text = text[:position] + rng.choice(["", "{", "]", '"', "\\u00", "\ud800"]) + text[position + 1 :]
    return text.encode("utf-8", errors="surrogatepass")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    seeds = _seeds()
    outcomes: Counter[str] = Counter()
    crashes = 0
    workdir = Path(tempfile.mkdtemp(prefix="ragtrace-fuzz-"))
    store = Store(workdir / "fuzz.db")
    started = time.perf_counter()
    for n in range(args.inputs):
        is_json = n % 5 == 4
        body = _json_seed(rng) if is_json else _mutate(rng, seeds)
        try:
            batch = (decode_json if is_json else decode_protobuf)(body, 0)
            store.write(batch)
        except OtlpDecodeError:
            outcomes["refused (400)"] += 1
            continue
        except Exception:
            crashes += 1
            outcomes["CRASH"] += 1
            if crashes <= 5:
                print(f"CRASH on input {n} ({'json' if is_json else 'protobuf'}): {body[:200].hex()}")
                traceback.print_exc()
            continue
        if batch.rejected:
            outcomes["partial success"] += 1
        elif batch.spans:
            outcomes["accepted"] += 1
        else:
            outcomes["accepted, empty"] += 1
    seconds = time.perf_counter() - started
    stored = store.db.execute("SELECT count(*) FROM spans").fetchone()[0]
    store.close()
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"fuzz_otlp: {args.inputs} inputs in {seconds:.1f} s ({args.inputs / seconds:,.0f}/s), seed {args.seed}")
    for outcome, number in sorted(outcomes.items()):
        print(f"  {outcome:18} {number:>8}")
    print(f"  crashes            {crashes:>8}")
    print(f"  distinct spans stored {stored}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
