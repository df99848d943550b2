"""An app traced by OpenLLMetry's LangChain instrumentation whose only processor is a ``BatchSpanProcessor`` in front
of the OTLP/HTTP exporter, as users set it up; run as its own process (the instrumentation can be set up only
once per process, and the in-app tests set it up for themselves):

    python -m tests.collector._openllmetry_app <collector base URL>

Runs the LCEL chain of the LangChain tests once and exports before it exits.
"""

from __future__ import annotations

import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragtrace import semconv
from tests.ragtrace.test_foreign_langchain import QUESTION, lcel_chain


def main(base_url: str) -> None:
    provider = TracerProvider(resource=Resource.create({semconv.SERVICE_NAME: "openllmetry-app"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base_url}/v1/traces")))
    LangchainInstrumentor().instrument(tracer_provider=provider)
    lcel_chain().invoke(QUESTION)
    provider.shutdown()  # exports what is batched


if __name__ == "__main__":
    main(sys.argv[1])
