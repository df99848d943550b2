"""``make e2e``: ragtrace's scores in a real tracing backend, Arize Phoenix, checked against the collector.

1. starts ``phoenix serve`` (from its own venv, ``.venv-phoenix``, which ``make e2e`` creates) on
   loopback with a temporary working directory and telemetry off, and ``ragtrace-collector serve``;
2. runs the support bot in this process with a TracerProvider that exports every span to both, through
   one ``ScoringSpanProcessor`` (offline judge) in front of two OTLP exporters, degrading half way;
3. asks Phoenix's GraphQL API for the spans matching ``ragtrace.eval.faithfulness < 0.5`` (Phoenix's
   span filter: the bare dotted attribute name) and checks they are exactly the collector's records with
   faithfulness below 0.5, and that every retriever span shows its chunks as Phoenix documents;
4. reads the span annotations the collector posted (``--phoenix-url``) back through the same API and checks
   that every scored span has exactly one per measured metric, with the collector's value and label, and that
   Phoenix's own annotation filter ``annotations['faithfulness'].score < 0.5`` finds the same spans;
5. stops Phoenix and the collector (also on failure and Ctrl-C). Exit status 0 when every check passed.

Not part of ``make test``: it installs Phoenix (a few hundred MB) and runs two servers for a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (``python examples/e2e_phoenix.py``): make ``examples`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from examples._harness import Child, ChildFailed, Children, free_port, poll, terminate_on_sigterm
from ragtrace import semconv

FILTER = f"{semconv.eval_score('faithfulness')} < 0.5"
"""The Phoenix span filter under test: ``ragtrace.eval.faithfulness < 0.5``."""

SPANS_QUERY = """
query Spans($project: String!, $filter: String, $after: String) {
  getProjectByName(name: $project) {
    spans(first: 100, after: $after, filterCondition: $filter) {
      edges { node { name spanKind numDocuments attributes context { spanId traceId } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""

ANNOTATIONS_QUERY = """
query Annotated($project: String!, $filter: String, $after: String) {
  getProjectByName(name: $project) {
    spans(first: 100, after: $after, filterCondition: $filter) {
      edges { node { context { spanId } spanAnnotations { name score label explanation annotatorKind identifier
                                                          metadata } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""

ANNOTATION_FILTER = "annotations['faithfulness'].score < 0.5"
"""The same question asked of the annotations: Phoenix's own filter on evaluations."""

VALIDATE_QUERY = """
query Validate($project: String!, $condition: String!) {
  getProjectByName(name: $project) { validateSpanFilterCondition(condition: $condition) { isValid errorMessage } }
}
"""


class CheckFailed(AssertionError):
    """One of the end-to-end checks did not hold."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phoenix", type=Path, default=Path(".venv-phoenix/bin/phoenix"), help="phoenix command")
    parser.add_argument("--questions", type=int, default=60, help="questions asked (default 60)")
    parser.add_argument("--degrade-after", type=int, default=30, help="first degraded question (default 30)")
    parser.add_argument("--sample-rate", type=float, default=0.5, help="share of calls scored (default 0.5)")
    parser.add_argument("--project", default="default", help="Phoenix project the spans land in")
    parser.add_argument("--workdir", type=Path, default=Path(".ragtrace/e2e"), help="logs and the SQLite file")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the backends")
    return parser


class Phoenix:
    """Phoenix's GraphQL API, as far as this check needs it."""

    def __init__(self, base_url: str, project: str) -> None:
        self._client = httpx.Client(base_url=base_url, timeout=30.0)
        self.project = project

    def _post(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        reply = self._client.post("/graphql", json={"query": query, "variables": variables})
        reply.raise_for_status()
        body: dict[str, Any] = reply.json()
        if body.get("errors"):
            raise CheckFailed(f"Phoenix GraphQL errors: {body['errors']}")
        data: dict[str, Any] = body["data"]
        return data

    def validate(self, condition: str) -> None:
        """Raise ``CheckFailed`` when Phoenix rejects the filter condition."""
        data = self._post(VALIDATE_QUERY, {"project": self.project, "condition": condition})
        result = (data.get("getProjectByName") or {}).get("validateSpanFilterCondition") or {}
        if not result.get("isValid"):
            raise CheckFailed(f"Phoenix rejects the filter {condition!r}: {result.get('errorMessage')}")

    def spans(self, condition: str | None, query: str = SPANS_QUERY) -> list[dict[str, Any]]:
        """Every span of the project matching ``condition`` (all pages); [] while the project does not exist.

        ``query`` picks the fields (``SPANS_QUERY``, ``ANNOTATIONS_QUERY``)."""
        out: list[dict[str, Any]] = []
        after: str | None = None
        while True:
            data = self._post(query, {"project": self.project, "filter": condition, "after": after})
            project = data.get("getProjectByName")
            if project is None:
                return out
            page = project["spans"]
            out += [edge["node"] for edge in page["edges"]]
            if not page["pageInfo"]["hasNextPage"]:
                return out
            after = page["pageInfo"]["endCursor"]

    def close(self) -> None:
        self._client.close()


def _nested(node: Any, dotted: str) -> Any:
    """``node["a"]["b"]`` for ``"a.b"``: Phoenix returns attributes un-flattened at the dots."""
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _documents(attributes_json: str) -> list[tuple[Any, Any]]:
    """(id, content) of every document in a Phoenix span's ``retrieval.documents`` list."""
    documents = _nested(json.loads(attributes_json or "{}"), semconv.RETRIEVAL_DOCUMENTS)
    if not isinstance(documents, list):
        return []
    return [(_nested(d, semconv.DOCUMENT_ID), _nested(d, semconv.DOCUMENT_CONTENT)) for d in documents]


def _store(db: Path, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
    try:
        return conn.execute(sql, list(args)).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def _start_phoenix(children: Children, args: argparse.Namespace, workdir: Path, tmp: str) -> tuple[Child, str]:
    if not args.phoenix.exists():
        raise ChildFailed(f"{args.phoenix} not found: run `make e2e`, which installs Phoenix in .venv-phoenix")
    port, grpc_port = free_port(), free_port()
    env = {
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": tmp,
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    phoenix = children.start("phoenix", [str(args.phoenix), "serve"], workdir / "phoenix.log", env)
    base = f"http://127.0.0.1:{port}"
    phoenix.wait_http(f"{base}/healthz", timeout=args.timeout)
    return phoenix, base


def _start_collector(
    children: Children, workdir: Path, db: Path, timeout: float, phoenix_url: str
) -> tuple[Child, str]:
    """The collector, posting every score it stores to Phoenix as a span annotation (``--phoenix-url``)."""
    port, grpc_port = free_port(), free_port()
    argv = [sys.executable, "-m", "ragtrace_collector", "serve", "--db", str(db), "--host", "127.0.0.1",
            "--port", str(port), "--grpc-port", str(grpc_port), "--phoenix-url", phoenix_url]  # fmt: skip
    collector = children.start("ragtrace-collector", argv, workdir / "collector.log")
    base = f"http://127.0.0.1:{port}"
    collector.wait_http(f"{base}/", timeout=timeout)
    return collector, base


def _run_bot(args: argparse.Namespace, phoenix_url: str, collector_url: str) -> None:
    """The app side: its own TracerProvider, one ragtrace scorer, two OTLP exporters (Phoenix and the collector).

    ``ragtrace.instrument`` adds the scorer to the provider in front of the fan-out, so both backends
    receive the same scored copy of every RAG span.
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SynchronousMultiSpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    import ragtrace
    from examples.support_bot import DegradeSwitch, build_bot, run_questions
    from ragtrace.judges.offline import OfflineJudge

    fan_out = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]  # unannotated in the SDK
    for base in (phoenix_url, collector_url):
        fan_out.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces")))
    provider = TracerProvider(resource=Resource.create({semconv.SERVICE_NAME: "support-bot-e2e"}))
    handle = ragtrace.instrument(provider, fan_out, judge=OfflineJudge(), sample_rate=args.sample_rate)
    try:
        bot = build_bot(degrade=DegradeSwitch(after=args.degrade_after, rate=0.8))
        answers = asyncio.run(run_questions(bot, args.questions))
        print(f"asked {len(answers)} questions ({sum(a.degraded for a in answers)} degraded answers)", flush=True)
    finally:
        handle.shutdown()
        provider.shutdown()


def check(args: argparse.Namespace, phoenix: Phoenix, db: Path) -> list[str]:
    """Run every check; return the lines to print. Raises ``CheckFailed`` on the first that fails."""
    lines: list[str] = []
    chain = f"span_kind == '{semconv.SPAN_KIND_CHAIN}'"
    rag_spans = poll(lambda: len(phoenix.spans(chain)) >= args.questions, args.timeout, interval=0.5)
    if not rag_spans:
        raise CheckFailed(f"Phoenix holds {len(phoenix.spans(chain))} of {args.questions} RAG spans")
    stored = poll(
        lambda: (_store(db, "SELECT COUNT(*) FROM rag_records") or [(0,)])[0][0] >= args.questions,
        args.timeout,
        interval=0.5,
    )
    if not stored:
        raise CheckFailed(f"the collector did not store {args.questions} RAG records")

    phoenix.validate(FILTER)
    found = {node["context"]["spanId"].lower() for node in phoenix.spans(FILTER)}
    expected = {
        row[0].lower()
        for row in _store(db, "SELECT span_id FROM scores WHERE metric = ? AND value < 0.5", ["faithfulness"])
    }
    scored = _store(db, "SELECT COUNT(*) FROM scores WHERE metric = ? AND value IS NOT NULL", ["faithfulness"])[0][0]
    lines.append(f"Phoenix filter {FILTER!r}: {len(found)} spans; collector: {len(expected)} of {scored} scored")
    if not expected:
        raise CheckFailed("the collector holds no record with faithfulness < 0.5: the degradation did not show")
    if found != expected:
        raise CheckFailed(
            f"Phoenix and the collector disagree: only in Phoenix {sorted(found - expected)}, "
            f"only in the collector {sorted(expected - found)}"
        )
    lines.append("  the same span ids in both: PASS")

    chunks_by_trace = {
        trace_id.lower(): [c.get("id") for c in json.loads(chunks or "[]")]
        for trace_id, chunks in _store(db, "SELECT trace_id, chunks FROM rag_records")
    }
    retrievers = phoenix.spans(f"span_kind == '{semconv.SPAN_KIND_RETRIEVER}'")
    if len(retrievers) < args.questions:
        raise CheckFailed(f"Phoenix shows {len(retrievers)} retriever spans for {args.questions} questions")
    for node in retrievers:
        documents = _documents(node["attributes"])
        ids = [doc_id for doc_id, _ in documents]
        if not documents or node["numDocuments"] != len(documents) or not all(content for _, content in documents):
            raise CheckFailed(f"retriever span {node['context']['spanId']} has no usable Phoenix documents: {node}")
        if ids != chunks_by_trace.get(node["context"]["traceId"].lower()):
            raise CheckFailed(
                f"retriever span {node['context']['spanId']}: Phoenix documents {ids} != collector chunks"
            )
    lines.append(f"retrieval documents: {len(retrievers)} retriever spans show their chunks as Phoenix documents: PASS")
    lines += check_annotations(args, phoenix, db, expected)
    return lines


def _ragtrace_annotations(phoenix: Phoenix, condition: str | None) -> dict[str, list[dict[str, Any]]]:
    """The annotations the collector posted (identifier ``ragtrace``), by span id, for the spans matching
    ``condition``."""
    return {
        node["context"]["spanId"].lower(): [a for a in node["spanAnnotations"] if a["identifier"] == "ragtrace"]
        for node in phoenix.spans(condition, ANNOTATIONS_QUERY)
    }


def check_annotations(args: argparse.Namespace, phoenix: Phoenix, db: Path, low: set[str]) -> list[str]:
    """Every score the collector holds is a span annotation in Phoenix: one per measured metric, same value.

    ``low``: the collector's span ids with faithfulness below 0.5, which Phoenix's annotation filter must find.
    """
    rows = _store(
        db,
        "SELECT s.span_id, s.metric, s.value, s.label, s.explanation, r.judge FROM scores s "
        "LEFT JOIN rag_records r ON r.span_id = s.span_id WHERE s.value IS NOT NULL",
    )
    expected = {(row[0].lower(), row[1]): row[2:] for row in rows}
    scored = {span_id for span_id, _ in expected}
    chain = f"span_kind == '{semconv.SPAN_KIND_CHAIN}'"

    def annotated() -> dict[str, list[dict[str, Any]]] | None:
        found = _ragtrace_annotations(phoenix, chain)
        count = sum(len(found.get(span_id, [])) for span_id in scored)
        return found if count >= len(expected) else None

    # The collector posts what it stored about a second later, and waits for spans Phoenix has not stored yet.
    found = poll(annotated, args.timeout, interval=0.5) or _ragtrace_annotations(phoenix, chain)
    for span_id, posted in found.items():
        names = [a["name"] for a in posted]
        if len(names) != len(set(names)):
            raise CheckFailed(f"span {span_id} has duplicate annotations: {sorted(names)}")
        if span_id not in scored and posted:
            raise CheckFailed(f"span {span_id} is annotated but the collector holds no score for it: {names}")
        measured = {metric for sid, metric in expected if sid == span_id}
        if set(names) != measured:
            raise CheckFailed(f"span {span_id}: Phoenix annotations {sorted(names)} != measured {sorted(measured)}")
        for annotation in posted:
            value, label, explanation, judge = expected[(span_id, annotation["name"])]
            if not math.isclose(annotation["score"], value, rel_tol=1e-9, abs_tol=1e-12):
                raise CheckFailed(f"span {span_id} {annotation['name']}: Phoenix {annotation['score']} != {value}")
            shown = (annotation["label"], annotation["explanation"], annotation["annotatorKind"])
            if shown != (label, explanation, "LLM") or (annotation["metadata"] or {}).get("judge") != judge:
                raise CheckFailed(
                    f"span {span_id} {annotation['name']}: {annotation} "
                    f"(collector: {label!r}, {explanation!r}, {judge})"
                )
    missing = scored - {span_id for span_id, posted in found.items() if posted}
    if missing:
        raise CheckFailed(f"{len(missing)} scored span(s) have no annotation in Phoenix: {sorted(missing)[:5]} ...")
    metrics = sorted({metric for _, metric in expected})
    lines = [
        f"span annotations: {len(expected)} on {len(scored)} scored spans ({', '.join(metrics)}), one per measured "
        "metric with the collector's value, label, explanation and judge: PASS"
    ]
    phoenix.validate(ANNOTATION_FILTER)
    by_annotation = {node["context"]["spanId"].lower() for node in phoenix.spans(ANNOTATION_FILTER)}
    if by_annotation != low:
        raise CheckFailed(
            f"Phoenix's filter {ANNOTATION_FILTER!r} found {len(by_annotation)} spans, the collector {len(low)}: "
            f"only in Phoenix {sorted(by_annotation - low)}, only in the collector {sorted(low - by_annotation)}"
        )
    lines.append(f"Phoenix filter {ANNOTATION_FILTER!r}: the same {len(low)} spans: PASS")
    return lines


def run(args: argparse.Namespace) -> int:
    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "e2e.db"
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="phoenix-") as tmp, Children() as children:
        print("starting Phoenix and ragtrace-collector ...", flush=True)
        _, phoenix_url = _start_phoenix(children, args, workdir, tmp)
        _, collector_url = _start_collector(children, workdir, db, args.timeout, phoenix_url)
        print(f"Phoenix on {phoenix_url}, collector on {collector_url}", flush=True)
        _run_bot(args, phoenix_url, collector_url)
        phoenix = Phoenix(phoenix_url, args.project)
        try:
            for line in check(args, phoenix, db):
                print(line)
        except CheckFailed as failure:
            print(f"FAIL: {failure}", file=sys.stderr)
            return 1
        finally:
            phoenix.close()
    print("make e2e: PASS (Phoenix and the collector stopped)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``make e2e``."""
    args = _parser().parse_args(argv)
    terminate_on_sigterm()
    try:
        return run(args)
    except ChildFailed as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted: Phoenix and the collector are stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
