"""OpenAIJudge transport over real HTTP: retries, Retry-After, timeouts, dead ports, concurrency, suppression."""

from __future__ import annotations

import asyncio
import socket

import httpx2
import openai
import pytest
from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace.judges import JudgeError
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.judges.openai.retry import _retry_after
from ragtrace.testing._stub_openai import StubOpenAIServer, StubReply
from tests.ragtrace.judges.conftest import MakeJudge


async def test_429_waits_what_retry_after_asks(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(status=429, headers={"Retry-After": "0.2"}))
    judge = make_judge(retry_base_delay=0.0)  # any wait seen below comes from Retry-After
    reply = await judge.detect_noncommittal("I don't know.")
    assert reply.value is True
    assert reply.cost.chat_calls == 2
    first, second = stub.chat_requests
    assert (first.status, second.status) == (429, 200)
    assert second.started - first.finished >= 0.2


async def test_retry_after_ms_header_is_honoured(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(status=429, headers={"retry-after-ms": "150", "Retry-After": "30"}))
    judge = make_judge(retry_base_delay=0.0)
    await judge.detect_noncommittal("yes")
    first, second = stub.chat_requests
    assert second.started - first.finished >= 0.15


async def test_retry_after_beyond_the_limit_fails_at_once(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(status=429, headers={"Retry-After": "3600"}))
    judge = make_judge(max_retry_after=1.0)
    with pytest.raises(JudgeError) as caught:
        await judge.detect_noncommittal("yes")
    assert caught.value.error_type == "rate_limited"
    assert "max_retry_after" in str(caught.value)
    assert len(stub.chat_requests) == 1


async def test_500_then_success(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(status=500), StubReply(status=503))
    judge = make_judge()
    reply = await judge.rate_chunks("capital of Brazil", ["Brasilia is the capital of Brazil."])
    assert reply.value == [1.0]
    assert [r.status for r in stub.chat_requests] == [500, 503, 200]
    assert reply.cost.chat_calls == 3


async def test_embeddings_are_retried_too(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(status=502))
    judge = make_judge()
    reply = await judge.embed(["a text"])
    assert len(reply.value) == 1
    assert reply.cost.embedding_calls == 2 and reply.cost.chat_calls == 0


async def test_persistent_5xx_gives_up_after_max_retries(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(*[StubReply(status=500)] * 5)
    judge = make_judge(max_retries=2)
    with pytest.raises(JudgeError) as caught:
        await judge.extract_claims("Brasilia is the capital.")
    assert caught.value.error_type == "http_5xx"
    assert caught.value.cost.chat_calls == 3
    assert len(stub.chat_requests) == 3


async def test_auth_errors_are_not_retried(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(status=401, body={"error": {"message": "bad key", "type": "invalid_api_key"}}))
    judge = make_judge()
    with pytest.raises(JudgeError) as caught:
        await judge.extract_claims("Brasilia is the capital.")
    assert caught.value.error_type == "authentication"
    assert len(stub.chat_requests) == 1


async def test_context_overflow_is_named_and_not_retried(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    message = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
    stub.script(StubReply(status=400, body={"error": {"message": message, "code": "context_length_exceeded"}}))
    judge = make_judge()
    with pytest.raises(JudgeError) as caught:
        await judge.verify(["claim"], ["a very long chunk"])
    assert caught.value.error_type == "context_too_long"
    assert len(stub.chat_requests) == 1


async def test_slow_replies_time_out_after_retries(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(delay=30.0), StubReply(delay=30.0))
    judge = make_judge(timeout=0.2, max_retries=1)
    with pytest.raises(JudgeError) as caught:
        await judge.extract_claims("Brasilia is the capital.")
    assert caught.value.error_type == "timeout"
    assert caught.value.cost.chat_calls == 2
    # The timeout bounds each attempt from below too: two attempts took at least two timeouts.
    assert caught.value.cost.seconds >= 0.4


async def test_slow_reply_then_fast_one_succeeds(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(delay=30.0))
    judge = make_judge(timeout=2.0)  # room for the fast reply on a loaded machine
    reply = await judge.extract_claims("Brasilia is the capital.")
    assert reply.value == ["Brasilia is the capital."]
    assert reply.cost.chat_calls == 2


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_dead_port_is_a_connection_error() -> None:
    judge = OpenAIJudge(
        base_url=f"http://127.0.0.1:{_dead_port()}/v1", max_retries=2, retry_base_delay=0.01, verify="batched"
    )
    try:
        with pytest.raises(JudgeError) as caught:
            await judge.extract_claims("Brasilia is the capital.")
        assert caught.value.error_type == "connection"
        assert caught.value.cost.chat_calls == 3
        with pytest.raises(JudgeError) as embed_caught:
            await judge.embed(["x"])
        assert embed_caught.value.error_type == "connection"
    finally:
        await judge.aclose()


async def test_concurrency_limit_is_honoured(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.latency = 0.1
    limited = make_judge(max_concurrency=3)
    await asyncio.gather(*(limited.detect_noncommittal(f"answer {i}") for i in range(12)))
    assert len(stub.chat_requests) == 12
    assert stub.max_in_flight == 3
    # The control: without the limit the same load does overlap more, so the assertion above can fail.
    stub.reset()
    unlimited = make_judge(max_concurrency=16)
    await asyncio.gather(*(unlimited.detect_noncommittal(f"answer {i}") for i in range(12)))
    assert stub.max_in_flight > 3


def _instrumented_client(base_url: str, provider: TracerProvider) -> openai.AsyncOpenAI:
    """A client with a request hook that behaves like an OpenTelemetry HTTP instrumentation:
    it makes a span per request unless the context says instrumentation is suppressed."""
    tracer = provider.get_tracer("fake-http-instrumentation")

    async def on_request(request: httpx2.Request) -> None:
        if otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY):
            return
        tracer.start_span(f"POST {request.url.path}").end()

    http_client = httpx2.AsyncClient(event_hooks={"request": [on_request]})
    return openai.AsyncOpenAI(base_url=base_url, api_key="test", http_client=http_client)


async def test_judge_calls_make_no_spans(stub: StubOpenAIServer) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    client = _instrumented_client(stub.base_url, provider)
    judge = OpenAIJudge(client=client, retry_base_delay=0.01, verify="batched")
    app_tracer = provider.get_tracer("app")
    try:
        with app_tracer.start_as_current_span("rag"):
            # The control: the app's own call through the same client is instrumented.
            await client.embeddings.create(model="m", input=["app call"])
            stub.script(StubReply(status=500))  # a retried call is suppressed too
            await judge.extract_claims("Brasilia is the capital.")
            await judge.embed(["judge call"])
            assert otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY) is None  # nothing leaks out
        names = [span.name for span in exporter.get_finished_spans()]
        assert names == ["POST /v1/embeddings", "rag"]
        assert len(stub.requests) == 4
    finally:
        await judge.aclose()
        await client.close()
        provider.shutdown()


async def test_openinference_openai_instrumentation_sees_no_judge_call(stub: StubOpenAIServer) -> None:
    instrumentation = pytest.importorskip("openinference.instrumentation.openai")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = instrumentation.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
    judge = OpenAIJudge(base_url=stub.base_url, verify="batched")
    try:
        # The control: the app's own call is traced by the real OpenAI auto-instrumentation.
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hello."}])
        traced = len(exporter.get_finished_spans())
        await judge.extract_claims("Brasilia is the capital of Brazil.")
        await judge.rate_chunks("capital of Brazil", ["Brasilia is the capital."])
        await judge.embed(["capital"])
        assert traced >= 1
        assert len(exporter.get_finished_spans()) == traced
        assert len(stub.requests) == 4
    finally:
        instrumentor.uninstrument()
        await judge.aclose()
        await client.close()
        provider.shutdown()


async def test_a_passed_client_is_left_open(stub: StubOpenAIServer) -> None:
    client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=5)
    judge = OpenAIJudge(client=client, verify="batched")
    await judge.aclose()
    await judge.aclose()  # idempotent
    assert client.is_closed() is False
    await client.embeddings.create(model="m", input=["still usable"])
    with pytest.raises(JudgeError) as caught:
        await judge.embed(["after close"])
    assert caught.value.error_type == "judge_closed"
    await client.close()


def test_retry_after_header_forms() -> None:
    def response(**headers: str) -> httpx2.Response:
        return httpx2.Response(429, headers=headers)

    assert _retry_after(response(**{"retry-after": "2"})) == 2.0
    assert _retry_after(response(**{"retry-after-ms": "250"})) == 0.25
    assert _retry_after(response(**{"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0  # in the past
    assert _retry_after(response(**{"retry-after": "soon"})) is None
    assert _retry_after(response()) is None


def test_a_judge_keeps_working_on_a_new_event_loop(stub: StubOpenAIServer) -> None:
    # The scorer's worker runs its own loop, and a forked child runs a new one: a judge that made its
    # own client must not reuse a connection pool bound to a loop that is gone.
    import gc

    judge = OpenAIJudge(base_url=stub.base_url, timeout=5.0, max_retries=0, verify="batched")

    async def ask(close: bool) -> list[str]:
        claims = (await judge.extract_claims("Paris is in France. It is the capital.")).value
        if close:
            await judge.aclose()
        return claims

    first = asyncio.run(ask(close=False))
    second = asyncio.run(ask(close=True))
    # The first loop's client was closed as that loop ended: collecting finds no socket left open
    # (an unclosed one is a ResourceWarning, an error under this suite's warning filter).
    gc.collect()
    assert first == second == ["Paris is in France.", "It is the capital."]
    assert len(stub.chat_requests) == 2


def test_a_judge_reused_across_event_loops_leaves_no_socket_open(stub: StubOpenAIServer) -> None:
    import gc
    import warnings

    judge = OpenAIJudge(base_url=stub.base_url, timeout=5.0, max_retries=0, verify="batched")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert len(asyncio.run(judge.embed(["hello"])).value) == 1
        gc.collect()
    asyncio.run(judge.aclose())
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_judge_reused_across_event_loops_keeps_no_ended_loop_alive(stub: StubOpenAIServer) -> None:
    # A script that calls asyncio.run once per record must not grow: each ended loop and its closed
    # client are let go, not kept by the judge for its whole life.
    import gc
    import weakref

    judge = OpenAIJudge(base_url=stub.base_url, timeout=5.0, max_retries=0, verify="batched")
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def embed() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        await judge.embed(["hello"])

    for _ in range(3):
        asyncio.run(embed())
    gc.collect()
    assert [ref() for ref in loops] == [None, None, None]
    asyncio.run(judge.aclose())
