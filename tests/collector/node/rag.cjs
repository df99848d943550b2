// A small RAG app in Node.js, traced with the OpenTelemetry JS SDK and OpenInference's semantic conventions,
// sending OTLP/HTTP to a collector and nothing else: no ragtrace in the app. Used by
// tests/collector/test_join_node.py, which scores what arrives on the collector's side.
//
// usage: node rag.cjs <collector base URL> <question>
// Prints the trace id. Each span is exported on its own as it ends (children first), so one trace reaches
// the collector in several exports.
"use strict";

const { context, trace } = require("@opentelemetry/api");
const { BasicTracerProvider, SimpleSpanProcessor } = require("@opentelemetry/sdk-trace-base");
const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-http");
const { Resource } = require("@opentelemetry/resources");
const { SemanticConventions: SC, OpenInferenceSpanKind } = require("@arizeai/openinference-semantic-conventions");

const [baseUrl, question] = process.argv.slice(2);

const DOCUMENTS = [
  { id: "hb-12", content: "Refunds are paid within 14 days.", score: 0.92, source: "handbook" },
  { id: "hb-13", content: "Refunds need a receipt.", score: 0.61, source: "handbook" },
];
const ANSWER = "Refunds are paid within 14 days, with a receipt.";

function documentKey(index, field) {
  return `${SC.RETRIEVAL_DOCUMENTS}.${index}.${field}`;
}

async function main() {
  const provider = new BasicTracerProvider({ resource: new Resource({ "service.name": "node-rag" }) });
  provider.addSpanProcessor(new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${baseUrl}/v1/traces` })));
  const tracer = provider.getTracer("node-rag");

  const root = tracer.startSpan("rag-pipeline", {
    attributes: { [SC.OPENINFERENCE_SPAN_KIND]: OpenInferenceSpanKind.CHAIN, [SC.INPUT_VALUE]: question },
  });
  const inRoot = trace.setSpan(context.active(), root);

  const retriever = tracer.startSpan(
    "retrieve",
    { attributes: { [SC.OPENINFERENCE_SPAN_KIND]: OpenInferenceSpanKind.RETRIEVER, [SC.INPUT_VALUE]: question } },
    inRoot,
  );
  DOCUMENTS.forEach((doc, i) => {
    retriever.setAttribute(documentKey(i, SC.DOCUMENT_ID), doc.id);
    retriever.setAttribute(documentKey(i, SC.DOCUMENT_CONTENT), doc.content);
    retriever.setAttribute(documentKey(i, SC.DOCUMENT_SCORE), doc.score);
    retriever.setAttribute(documentKey(i, SC.DOCUMENT_METADATA), JSON.stringify({ source: doc.source }));
  });
  retriever.end();

  const llm = tracer.startSpan(
    "generate",
    { attributes: { [SC.OPENINFERENCE_SPAN_KIND]: OpenInferenceSpanKind.LLM, [SC.LLM_MODEL_NAME]: "fake-model" } },
    inRoot,
  );
  llm.setAttribute(`${SC.LLM_OUTPUT_MESSAGES}.0.${SC.MESSAGE_ROLE}`, "assistant");
  llm.setAttribute(`${SC.LLM_OUTPUT_MESSAGES}.0.${SC.MESSAGE_CONTENT}`, ANSWER);
  llm.end();

  root.setAttribute(SC.OUTPUT_VALUE, ANSWER);
  root.end();

  await provider.forceFlush();
  await provider.shutdown();
  process.stdout.write(root.spanContext().traceId + "\n");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
