"""The smallest ragtrace app: three decorated functions, one ``configure()`` call, a few questions.

Run a collector, then the app (from the repository root, in the venv ``make demo`` creates)::

    ragtrace-collector serve --db ragtrace.db          # OTLP/HTTP on 127.0.0.1:4318
    python examples/quickstart.py                      # sends there; scores every call offline

or without any backend, printing the scored spans as JSON::

    python examples/quickstart.py --console
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

import ragtrace

DOCUMENTS = [
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "The Eiffel Tower is 330 metres tall and was designed by Gustave Eiffel's company.",
    "The Louvre, in Paris, is the most-visited museum in the world.",
    "Mount Fuji, at 3,776 metres, is the highest mountain in Japan.",
]


@ragtrace.retrieve
def search(query: str) -> list[str]:
    """A retriever: the two documents sharing most words with the query (its return value is the chunks)."""
    words = set(re.findall(r"\w+", query.lower()))
    return sorted(DOCUMENTS, key=lambda d: -len(words & set(re.findall(r"\w+", d.lower()))))[:2]


@ragtrace.generate
def write_answer(query: str, chunks: list[str]) -> str:
    """The generation step: a real app calls its LLM here; this one quotes the best chunk."""
    return chunks[0] if chunks else "I don't know."


@ragtrace.rag
def answer(query: str) -> str:
    """The RAG entry point: its span holds the query, the chunks of ``search`` and the answer, and gets scored."""
    return write_answer(query, search(query))


def main(argv: Sequence[str] | None = None) -> int:
    """Ask a few questions; ``--console`` prints the spans instead of sending them over OTLP."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--console", action="store_true", help="print spans to stdout instead of OTLP")
    args = parser.parse_args(argv)
    if args.console:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        handle = ragtrace.configure(
            service_name="quickstart", exporter=ConsoleSpanExporter(), sample_rate=1.0, export_metrics=False
        )
    else:
        # OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318); the offline judge
        # scores unless OPENAI_API_KEY or RAGTRACE_JUDGE_BASE_URL is set.
        handle = ragtrace.configure(service_name="quickstart", sample_rate=1.0, export_metrics=False)
    try:
        for question in ("When was the Eiffel Tower completed?", "How tall is Mount Fuji?"):
            print(f"{question} -> {answer(question)}", file=sys.stderr)
    finally:
        handle.shutdown()  # scores what is still queued, then exports it
    return 0


if __name__ == "__main__":
    sys.exit(main())
