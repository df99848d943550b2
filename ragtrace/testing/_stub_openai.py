"""``StubOpenAIServer``: a scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests, demos and benchmarks.

It serves ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` over real HTTP from a thread
(stdlib ``ThreadingHTTPServer``; no dependency), logs every request (path, body, start and end
times, status, the judge step it recognised), and tracks the most requests in flight at once.

By default it answers every ``OpenAIJudge`` step deterministically and plausibly from the request
text (claims are the answer's sentences, verdicts and ratings come from word overlap, embeddings are
a hashed bag of words), so the same server drives tests, ``ragtrace eval`` demos and the cost
benchmark. A prompt it does not know (another library's) gets a generic reply shaped by the JSON
schema found in the request (``response_format``, a tool's parameters, or a schema in the prompt).

Behaviours are scriptable: ``mode`` makes the server reject JSON schemas (``json_object``, like
older vLLM / llama.cpp) or any response format (``text``); ``reply_style`` wraps replies in prose or
breaks them; ``latency`` delays every reply; ``script(StubReply(...), ...)`` queues one-shot replies
(429 with ``Retry-After``, 500, a slow reply, raw content) served to the next requests in order;
``responder`` replaces the default content for chosen steps.

Token usage is counted with one crude tokenizer (words and punctuation marks) over everything the
model would read: messages, the response-format schema and tool definitions. It is not any real
model's count, but it is the same ruler for every client measured against the server.

Where it lives, one job a module. This one is the import path tests, examples and benchmarks use (it
re-exports the names they import) and the ``python -m`` entry point:

- ``_stub_server``: ``StubOpenAIServer`` (lifecycle, scripting, the request log) and ``StubReply``.
- ``_stub_http``: the socket server and request handler; ``LoggedRequest``, one entry of the log.
- ``_stub_replies``: the chat completion, embeddings and refusal bodies; ``Mode``, ``ReplyStyle``.
- ``_stub_answers``: the default answer to each ragtrace judge step.
- ``_stub_generic``: the schema-shaped reply to another library's prompt.
- ``_stub_schema_check``: where a reply broke the request's ``json_schema``.
- ``_stub_logprobs``: the per-token logprobs of a reply.
- ``_stub_request``: reading a request (message text, judge step, forced tool); the error body.
- ``_stub_text``: the token ruler, content words, overlap, sentences and embeddings all of it rests on.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ragtrace.testing._stub_generic import schema_instance as _instance
from ragtrace.testing._stub_generic import schema_of as _schema_of
from ragtrace.testing._stub_http import LoggedRequest
from ragtrace.testing._stub_replies import Mode, ReplyStyle, Responder
from ragtrace.testing._stub_schema_check import schema_errors_of, validate
from ragtrace.testing._stub_server import StubOpenAIServer, StubReply
from ragtrace.testing._stub_text import (
    EMBEDDING_DIMENSIONS,
    content_words,
    count_tokens,
    embed_text,
    is_noncommittal,
    overlap,
    sentences,
)

# The names this module held before it was split, so their imports keep working (the private two are
# imported by tests/ragtrace/judges/test_openai_parsing.py).
__all__ = [
    "EMBEDDING_DIMENSIONS",
    "LoggedRequest",
    "Mode",
    "ReplyStyle",
    "Responder",
    "StubOpenAIServer",
    "StubReply",
    "_instance",
    "_schema_of",
    "content_words",
    "count_tokens",
    "embed_text",
    "is_noncommittal",
    "main",
    "overlap",
    "schema_errors_of",
    "sentences",
    "validate",
]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the stub until interrupted: ``python -m ragtrace.testing._stub_openai --port 8765 [--latency 0.2]``."""
    import argparse

    parser = argparse.ArgumentParser(description="A local OpenAI-compatible stub server for ragtrace demos.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds every reply waits")
    parser.add_argument("--mode", choices=["json_schema", "json_object", "text"], default="json_schema")
    args = parser.parse_args(argv)
    server = StubOpenAIServer(port=args.port, latency=args.latency, mode=args.mode).start()
    print(f"stub OpenAI server at {server.base_url} (Ctrl-C stops it)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
