"""A store for the triage pages' tests: a day of records of two services with claims, metadata and a
hallucination spike, and the spike's alert history."""

from __future__ import annotations

import json
from typing import Any

from ragtrace_collector._otlp import Batch
from ragtrace_collector._store import Store
from ragtrace_collector._store.schema import ALERT_COLUMNS, ALERTS, RAG_COLUMNS, SCORE_COLUMNS, SPAN_COLUMNS

from tests.collector._stores import whole_row

NS = 1_000_000_000
T0 = 1_800_000_000 * NS
MINUTE = 60 * NS
SPIKE_FROM = 100
"""Records from this index on hallucinate (in service ``shop``)."""
N_RECORDS = 140
CHUNKS = [
    {"id": "doc-eiffel", "content": "The Eiffel Tower is in Paris. It was completed in 1889.", "score": 0.91},
    {"id": "doc-louvre", "content": "The Louvre is the world's most-visited museum.", "score": 0.42},
]
GOOD_ANSWER = "The Eiffel Tower is in Paris. It was completed in 1889."
BAD_ANSWER = "The Eiffel Tower is in Paris. It was completed in 1923. It is made of gold."


def span_id(i: int) -> str:
    return f"{i:016x}"


def claims_of(bad: bool) -> list[dict[str, Any]]:
    claims = [{"claim": "The Eiffel Tower is in Paris.", "verdict": "supported", "chunk": 0, "support": 0.93}]
    if bad:
        claims += [
            {"claim": "It was completed in 1923.", "verdict": "contradicted", "chunk": 0, "support": 0.04},
            {"claim": "It is made of gold.", "verdict": "unsupported", "chunk": None, "support": 0.11},
        ]
    else:
        claims.append({"claim": "It was completed in 1889.", "verdict": "supported", "chunk": 0, "support": 0.88})
    return claims


def seed_triage(store: Store) -> None:
    """``N_RECORDS`` records a minute apart (``shop``, and every fifth one ``docs``), scored, with claims; through
    the store's own writes, so it seeds either engine."""
    rag, scores, spans = [], [], []
    for i in range(N_RECORDS):
        sid, time_ns = span_id(i), T0 + i * MINUTE
        service = "docs" if i % 5 == 4 else "shop"
        bad = service == "shop" and i >= SPIKE_FROM and i % 3 != 0
        answer = BAD_ANSWER if bad else GOOD_ANSWER
        claims = claims_of(bad)
        faith = sum(c["support"] for c in claims) / len(claims)
        rag.append({
            "span_id": sid, "trace_id": sid * 2, "service": service, "route": "/ask", "time_ns": time_ns,
            "query": f"Question {i}: where is the Eiffel Tower and when was it built?", "answer": answer,
            "chunks": json.dumps(CHUNKS), "decision": "evaluated", "judge": "offline:minilm-int8",
            "calls": 1, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.01 + 0.001 * (i % 7),
        })  # fmt: skip
        for metric, value, label in (
            ("faithfulness", faith, "partially_faithful" if bad else "faithful"),
            ("hallucination", 1.0 - faith, "hallucinated" if bad else "grounded"),
        ):
            scores.append({
                "span_id": sid, "metric": metric, "value": value, "label": label,
                "explanation": f"{sum(c['verdict'] == 'supported' for c in claims)} of {len(claims)} claims supported",
                "trace_id": sid * 2, "service": service, "route": "/ask", "time_ns": time_ns, "source": "app",
                "claims": json.dumps(claims),
            })  # fmt: skip
        metadata = json.dumps({"user": "alice" if i % 2 else "bob"})
        attributes = json.dumps({"metadata": metadata, "ragtrace.eval.faithfulness.judge": "offline:minilm-int8"})
        spans.append({
            "span_id": sid, "trace_id": sid * 2, "name": "answer", "service": service, "start_ns": time_ns,
            "end_ns": time_ns, "attributes": attributes,
        })  # fmt: skip
    store.write(
        Batch(
            spans=[whole_row(r, SPAN_COLUMNS) for r in spans],
            rag_records=[whole_row(r, RAG_COLUMNS) for r in rag],
            scores=[whole_row(r, SCORE_COLUMNS) for r in scores],
        )
    )
    alert = {"rule": "hallucination-spike", "kind": "spike", "metric": "hallucination", "service": "shop",
             "route": None, "sinks": "[]", "threshold": 8.0}  # fmt: skip
    history = [
        {**alert, "time_ns": T0 + 90 * MINUTE, "state": "OK", "previous_state": "NO_DATA", "value": 0.4,
         "message": "bad rate 3% vs baseline 4%"},
        {**alert, "time_ns": T0 + 106 * MINUTE, "state": "WARNING", "previous_state": "OK", "value": 5.1,
         "message": "bad rate 60% vs baseline 4%; CUSUM 5.1"},
        {**alert, "time_ns": T0 + 110 * MINUTE, "state": "ALERT", "previous_state": "WARNING", "value": 9.7,
         "message": "bad rate 64% over the last 11 records vs baseline 4%; CUSUM 9.7 (alert at 8)"},
    ]  # fmt: skip
    insert_alerts(store, history)


def insert_alerts(store: Store, history: list[dict[str, Any]]) -> None:
    """Rows of ``alerts`` as the watcher writes them (every column it does not name NULL, ``silenced`` 0)."""
    columns = [c for c in ALERT_COLUMNS if c != "id"]
    insert = f"INSERT INTO {ALERTS} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    values = [[a.get(c, 0 if c == "silenced" else None) for c in columns] for a in history]
    store.change(lambda conn: conn.executemany(insert, values))
