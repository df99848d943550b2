"""Capture settings, the RECORDS hand-off, the tracer provider injection, privacy and size limits."""

from __future__ import annotations

import builtins
import json
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import _capture, environment_variables, semconv
from ragtrace._capture import REDACTION_FAILED, CaptureSettings, RecordStore
from ragtrace._record import RagRecord

DOC = semconv.retrieval_document
MARKER = semconv.TRUNCATION_MARKER


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=100_000))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _capture.set_tracer_provider(provider)
    yield exporter
    _capture.set_tracer_provider(None)
    _capture.set_settings(None)
    provider.shutdown()


@pytest.fixture
def records() -> Iterator[RecordStore]:
    _capture.RECORDS.acquire()
    yield _capture.RECORDS
    _capture.RECORDS.release()


def rag_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    [span] = [s for s in exporter.get_finished_spans() if (s.attributes or {})[semconv.RAGTRACE_ROLE] == "rag"]
    return span


def take(span: ReadableSpan, store: RecordStore) -> RagRecord:
    assert span.context is not None
    found = store.take(span.context.trace_id, span.context.span_id)
    assert found is not None
    return found


def text_values(span: ReadableSpan) -> list[str]:
    return [v for v in (span.attributes or {}).values() if isinstance(v, str)]


# --------------------------------------------------------------------------------------------------
# CaptureSettings
# --------------------------------------------------------------------------------------------------


def test_settings_defaults() -> None:
    settings = CaptureSettings()
    assert settings.capture_content is True
    assert settings.redact is None
    assert (settings.max_attribute_length, settings.max_record_chunk_length, settings.max_record_chunks) == (
        8192,
        65536,
        256,
    )


def test_from_env_reads_variables_and_arguments_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(environment_variables.RAGTRACE_CAPTURE_CONTENT, "false")
    monkeypatch.setenv(environment_variables.RAGTRACE_MAX_ATTRIBUTE_LENGTH, "100")
    monkeypatch.setenv(environment_variables.RAGTRACE_MAX_RECORD_CHUNK_LENGTH, "200")
    monkeypatch.setenv(environment_variables.RAGTRACE_MAX_RECORD_CHUNKS, "7")
    settings = CaptureSettings.from_env()
    assert (settings.capture_content, settings.max_attribute_length) == (False, 100)
    assert (settings.max_record_chunk_length, settings.max_record_chunks) == (200, 7)
    assert CaptureSettings.from_env(capture_content=True, max_record_chunks=3).max_record_chunks == 3
    assert CaptureSettings.from_env(capture_content=True).capture_content is True


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        (environment_variables.RAGTRACE_CAPTURE_CONTENT, "maybe"),
        (environment_variables.RAGTRACE_MAX_ATTRIBUTE_LENGTH, "0"),
        (environment_variables.RAGTRACE_MAX_RECORD_CHUNK_LENGTH, "lots"),
        (environment_variables.RAGTRACE_MAX_RECORD_CHUNKS, "-1"),
    ],
)
def test_malformed_variables_warn_naming_the_variable_and_keep_the_defaults(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv(variable, value)
    # Content capture falls to off, the safe side; the limits to their defaults.
    expected = CaptureSettings(capture_content=variable != environment_variables.RAGTRACE_CAPTURE_CONTENT)
    assert CaptureSettings.from_env() == expected
    assert len(warned(variable)) == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"capture_content": "no"},
        {"redact": "not callable"},
        {"max_attribute_length": 0},
        {"max_record_chunk_length": 1.5},
        {"max_record_chunks": -1},
        {"max_attribute_length": True},
    ],
)
def test_invalid_arguments_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ragtrace.ConfigurationError, match=next(iter(kwargs))):
        CaptureSettings(**kwargs)


def test_unknown_override_raises() -> None:
    with pytest.raises(ragtrace.ConfigurationError, match="capture_contents"):
        CaptureSettings.from_env(capture_contents=False)


def test_set_and_get_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        mine = CaptureSettings(max_record_chunks=1)
        _capture.set_settings(mine)
        assert _capture.get_settings() is mine
        _capture.set_settings(None)
        monkeypatch.setenv(environment_variables.RAGTRACE_MAX_RECORD_CHUNKS, "9")
        assert _capture.get_settings().max_record_chunks == 9
        with pytest.raises(ragtrace.ConfigurationError):
            _capture.set_settings({"capture_content": False})  # type: ignore[arg-type]
    finally:
        _capture.set_settings(None)


def test_a_malformed_variable_warns_at_decoration_not_in_the_request(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    _capture.set_settings(None)
    monkeypatch.setenv(environment_variables.RAGTRACE_CAPTURE_CONTENT, "sometimes")
    try:

        @ragtrace.rag
        def bot(q: str) -> str:
            return q

        assert len(warned("RAGTRACE_CAPTURE_CONTENT")) == 1
        assert bot("q") == "q"
        assert len(warned("RAGTRACE_CAPTURE_CONTENT")) == 1  # once, not per request
    finally:
        _capture.set_settings(None)


def test_set_tracer_provider_rejects_other_objects() -> None:
    with pytest.raises(ragtrace.ConfigurationError, match="TracerProvider"):
        _capture.set_tracer_provider("provider")  # type: ignore[arg-type]
    provider = TracerProvider()
    _capture.set_tracer_provider(provider)
    assert _capture.get_tracer_provider() is provider
    _capture.set_tracer_provider(None)
    assert _capture.get_tracer_provider() is None


# --------------------------------------------------------------------------------------------------
# RECORDS
# --------------------------------------------------------------------------------------------------


def rec(i: int) -> RagRecord:
    return RagRecord.of(f"q{i}")


def test_put_stores_nothing_while_nobody_holds_the_store() -> None:
    store = RecordStore()
    store.put(1, 1, rec(1))
    assert len(store) == 0 and store.take(1, 1) is None


def test_put_take_removes_and_release_empties() -> None:
    store = RecordStore()
    store.acquire()
    store.acquire()
    store.put(1, 2, rec(1))
    store.put(1, 3, rec(2))
    assert store.take(1, 2) == rec(1)
    assert store.take(1, 2) is None
    store.release()
    assert len(store) == 1  # one holder left
    store.release()
    assert len(store) == 0 and not store.active
    store.release()  # an extra release is harmless
    assert store.holders == 0


def test_bound_evicts_oldest_first_and_counts() -> None:
    store = RecordStore(maxsize=3)
    store.acquire()
    for i in range(5):
        store.put(0, i, rec(i))
    assert store.evicted == 2
    assert [store.take(0, i) for i in range(5)] == [None, None, rec(2), rec(3), rec(4)]
    for i in range(3):
        store.put(0, i, rec(i))
    store.resize(1)
    assert store.evicted == 4 and len(store) == 1 and store.take(0, 2) == rec(2)
    with pytest.raises(ragtrace.ConfigurationError):
        RecordStore(maxsize=0)


def test_default_bound() -> None:
    assert _capture.RECORDS.maxsize == 4096


def test_store_is_thread_safe() -> None:
    store = RecordStore(maxsize=100_000)
    store.acquire()
    taken: list[int] = []
    lock = threading.Lock()

    def work(t: int) -> None:
        for i in range(500):
            store.put(t, i, rec(i))
        got = [store.take(t, i) for i in range(500)]
        with lock:
            taken.append(sum(1 for r in got if r is not None))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert taken == [500] * 8 and len(store) == 0


# --------------------------------------------------------------------------------------------------
# Privacy
# --------------------------------------------------------------------------------------------------


@ragtrace.retrieve
def search(q: str) -> list[dict[str, Any]]:
    return [{"text": f"chunk about {q}", "id": "d1", "score": 0.5, "metadata": {"owner": "alice@example.com"}}]


@ragtrace.generate
def write(q: str) -> str:
    return f"answer about {q}"


@ragtrace.rag
def bot(q: str) -> str:
    search(q)
    ragtrace.record(reference=f"reference about {q}")
    return write(q)


def test_capture_off_exports_no_text_but_scoring_sees_it(exporter: InMemorySpanExporter, records: RecordStore) -> None:
    _capture.set_settings(CaptureSettings(capture_content=False))
    bot("the secret plan")
    for span in exporter.get_finished_spans():
        assert not any("secret" in v or "alice" in v for v in text_values(span)), span.name
        assert (span.attributes or {})[semconv.RAGTRACE_CONTENT_CAPTURED] is False
    span = rag_span(exporter)
    a = span.attributes or {}
    assert a[DOC(0, semconv.DOCUMENT_ID)] == "d1" and a[DOC(0, semconv.DOCUMENT_SCORE)] == 0.5
    assert a[semconv.RAGTRACE_CHUNK_COUNT] == 1
    record = take(span, records)
    assert record.query == "the secret plan"
    assert record.texts == ["chunk about the secret plan"]
    assert record.answer == "answer about the secret plan"
    assert record.reference == "reference about the secret plan"


def test_capture_off_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, exporter: InMemorySpanExporter, records: RecordStore
) -> None:
    monkeypatch.setenv(environment_variables.RAGTRACE_CAPTURE_CONTENT, "false")
    _capture.set_settings(None)
    bot("the secret plan")
    assert not any("secret" in v for s in exporter.get_finished_spans() for v in text_values(s))
    assert take(rag_span(exporter), records).query == "the secret plan"


def test_redact_runs_before_export_and_before_the_record(exporter: InMemorySpanExporter, records: RecordStore) -> None:
    _capture.set_settings(CaptureSettings(redact=lambda s: s.replace("secret", "[REDACTED]")))
    bot("the secret plan")
    for span in exporter.get_finished_spans():
        assert not any("secret" in v for v in text_values(span)), span.name
    span = rag_span(exporter)
    assert (span.attributes or {})[semconv.INPUT_VALUE] == "the [REDACTED] plan"
    record = take(span, records)
    assert record.query == "the [REDACTED] plan"
    assert record.texts == ["chunk about the [REDACTED] plan"]
    assert record.answer == "answer about the [REDACTED] plan"
    assert record.reference == "reference about the [REDACTED] plan"


def test_a_raising_redact_hook_hides_the_text_and_the_call_succeeds(
    exporter: InMemorySpanExporter, records: RecordStore
) -> None:
    def hook(text: str) -> str:
        raise RuntimeError("regex bug")

    _capture.set_settings(CaptureSettings(redact=hook))
    assert bot("the secret plan") == "answer about the secret plan"
    span = rag_span(exporter)
    assert (span.attributes or {})[semconv.INPUT_VALUE] == REDACTION_FAILED
    assert not any("secret" in v for s in exporter.get_finished_spans() for v in text_values(s))
    assert take(span, records).texts == [REDACTION_FAILED]


def _hide_emails(text: str) -> str:
    return re.sub(r"[\w.]+@\w+\.com", "[email]", text)


@pytest.mark.parametrize("bound", [65536, 8192])
def test_an_address_split_by_the_cut_before_redaction_is_neither_recorded_nor_exported(
    exporter: InMemorySpanExporter, records: RecordStore, bound: int
) -> None:
    # Each entry shrinks by 15 characters, so the text before the cut made ahead of the hook shrinks
    # by far more than the margin; the last address is split by that cut.
    _capture.set_settings(CaptureSettings(redact=_hide_emails, max_record_chunk_length=bound))
    entry = "From: user@example.com said hello. "
    cut_at = bound + _capture.REDACT_MARGIN
    text = entry * (cut_at // len(entry)) + " john.doe.private@example.com rest"
    assert text.index("john") < cut_at <= text.index(".com rest")

    @ragtrace.rag
    def ask(q: str) -> str:
        ragtrace.record(chunks=[text])
        return "a"

    ask("q")
    span = rag_span(exporter)
    exported = (span.attributes or {})[DOC(0, semconv.DOCUMENT_CONTENT)]
    assert "john" not in exported and "@" not in exported
    assert exported.endswith(MARKER)
    [kept] = take(span, records).texts
    assert "john" not in kept and "@" not in kept


# --------------------------------------------------------------------------------------------------
# Size limits
# --------------------------------------------------------------------------------------------------


def test_ten_megabyte_chunks_are_cut_for_export_and_for_the_record(
    exporter: InMemorySpanExporter, records: RecordStore
) -> None:
    big = "x" * 10_000_000
    big_bytes = b"y" * 10_000_000

    @ragtrace.retrieve
    def huge(q: str) -> list[object]:
        return [big, big_bytes]

    @ragtrace.rag
    def app(q: str) -> str:
        huge(q)
        return "z" * 10_000_000

    assert len(app("q")) == 10_000_000
    limit = CaptureSettings().max_attribute_length
    for span in exporter.get_finished_spans():
        for value in text_values(span):
            assert len(value) <= limit + len(MARKER)
    span = rag_span(exporter)
    a = span.attributes or {}
    assert a[DOC(0, semconv.DOCUMENT_CONTENT)] == "x" * limit + MARKER
    assert a[DOC(1, semconv.DOCUMENT_CONTENT)] == "y" * limit + MARKER
    assert a[semconv.OUTPUT_VALUE] == "z" * limit + MARKER
    assert a[semconv.RAGTRACE_CONTENT_TRUNCATED] is True
    record = take(span, records)
    keep = CaptureSettings().max_record_chunk_length
    assert [len(t) for t in record.texts] == [keep, keep]
    assert len(record.answer) == keep


def test_ten_thousand_chunks_keep_a_bounded_number(exporter: InMemorySpanExporter, records: RecordStore) -> None:
    @ragtrace.retrieve
    def many(q: str) -> list[dict[str, Any]]:
        return [{"text": f"chunk {i}", "id": str(i)} for i in range(10_000)]

    @ragtrace.rag
    def app(q: str) -> str:
        return str(len(many(q)))

    assert app("q") == "10000"
    bound = CaptureSettings().max_record_chunks
    for span in exporter.get_finished_spans():
        a = span.attributes or {}
        assert a[semconv.RAGTRACE_CHUNK_COUNT] == 10_000
        assert DOC(bound - 1, semconv.DOCUMENT_CONTENT) in a
        assert DOC(bound, semconv.DOCUMENT_CONTENT) not in a
        assert len(a) < 4 * bound + 20
    retriever = next(s for s in exporter.get_finished_spans() if s is not rag_span(exporter))
    assert len(json.loads((retriever.attributes or {})[semconv.GEN_AI_RETRIEVAL_DOCUMENTS])) == bound
    record = take(rag_span(exporter), records)
    assert len(record.chunks) == bound and record.chunks[-1].id == str(bound - 1)


def test_long_ids_are_cut_and_marked_and_the_documents_json_drops_documents(exporter: InMemorySpanExporter) -> None:
    _capture.set_settings(CaptureSettings(max_attribute_length=100))

    @ragtrace.retrieve
    def search(q: str) -> list[dict[str, Any]]:
        return [{"text": "t", "id": "i" * 500}] + [{"text": "t", "id": str(n)} for n in range(50)]

    search("q")
    [span] = exporter.get_finished_spans()
    a = span.attributes or {}
    assert a[DOC(0, semconv.DOCUMENT_ID)] == "i" * 100 + MARKER
    assert a[DOC(1, semconv.DOCUMENT_ID)] == "0"
    # The documents JSON is never cut: documents are left out from the end, and the first one (its id
    # alone is past the bound) takes the rest with it, so the array stays in rank order.
    assert json.loads(str(a[semconv.GEN_AI_RETRIEVAL_DOCUMENTS])) == []
    assert a[semconv.RAGTRACE_CONTENT_TRUNCATED] is True


def test_a_long_chunk_id_alone_sets_the_truncated_flag(exporter: InMemorySpanExporter) -> None:
    _capture.set_settings(CaptureSettings(max_attribute_length=100, capture_content=False))

    @ragtrace.rag(chunks=lambda r: r)
    def bot(q: str) -> list[dict[str, Any]]:
        return [{"text": "t", "id": "i" * 101}]

    bot("q")
    a = rag_span(exporter).attributes or {}
    assert a[DOC(0, semconv.DOCUMENT_ID)] == "i" * 100 + MARKER
    assert a[semconv.RAGTRACE_CONTENT_TRUNCATED] is True


def test_chunks_past_the_bound_are_counted_but_never_redacted(exporter: InMemorySpanExporter) -> None:
    seen: list[str] = []

    def hook(text: str) -> str:
        seen.append(text)
        return text

    _capture.set_settings(CaptureSettings(redact=hook, max_record_chunks=3))

    @ragtrace.retrieve
    def streamed(q: str) -> Iterator[str]:
        for i in range(100):
            yield f"streamed {i}"

    @ragtrace.rag
    def app(q: str) -> str:
        list(streamed(q))
        for i in range(100):
            ragtrace.record(chunks=f"recorded {i}")
        return "a"

    app("q")
    assert sorted(t for t in seen if t.startswith("streamed")) == [f"streamed {i}" for i in range(3)]
    assert [t for t in seen if t.startswith("recorded")] == []  # the retriever's chunks filled the bound
    counts = {s.name: (s.attributes or {})[semconv.RAGTRACE_CHUNK_COUNT] for s in exporter.get_finished_spans()}
    assert counts == {"streamed": 100, "app": 200}


def test_the_chunk_bound_holds_across_retrievers(exporter: InMemorySpanExporter, records: RecordStore) -> None:
    _capture.set_settings(CaptureSettings(max_record_chunks=3))

    @ragtrace.retrieve
    def two(q: str) -> list[str]:
        return [f"{q}1", f"{q}2"]

    @ragtrace.rag
    def app(q: str) -> str:
        two("a")
        two("b")
        return "ok"

    app("q")
    span = rag_span(exporter)
    assert (span.attributes or {})[semconv.RAGTRACE_CHUNK_COUNT] == 4
    assert take(span, records).texts == ["a1", "a2", "b1"]


def test_a_small_export_limit_with_a_larger_record_limit(exporter: InMemorySpanExporter, records: RecordStore) -> None:
    _capture.set_settings(CaptureSettings(max_attribute_length=4, max_record_chunk_length=8))

    @ragtrace.rag(chunks=lambda r: ["abcdefghijkl", "abc"])
    def app(q: str) -> str:
        return "short"

    app("abcdef")
    a = rag_span(exporter).attributes or {}
    assert a[DOC(0, semconv.DOCUMENT_CONTENT)] == "abcd" + MARKER
    assert a[DOC(1, semconv.DOCUMENT_CONTENT)] == "abc"
    assert a[semconv.INPUT_VALUE] == "abcd" + MARKER
    assert a[semconv.OUTPUT_VALUE] == "shor" + MARKER
    record = take(rag_span(exporter), records)
    assert record.texts == ["abcdefgh", "abc"]
    assert record.query == "abcdef"


def test_a_record_limit_below_the_export_limit_still_marks_the_export(
    exporter: InMemorySpanExporter, records: RecordStore
) -> None:
    _capture.set_settings(CaptureSettings(max_attribute_length=10, max_record_chunk_length=3))

    @ragtrace.rag(chunks=lambda r: ["x" * 12])
    def app(q: str) -> str:
        return "a"

    app("q")
    a = rag_span(exporter).attributes or {}
    assert a[DOC(0, semconv.DOCUMENT_CONTENT)] == "x" * 10 + MARKER
    assert take(rag_span(exporter), records).texts == ["xxx"]


def test_stream_accumulation_is_bounded(exporter: InMemorySpanExporter, records: RecordStore) -> None:
    _capture.set_settings(CaptureSettings(max_attribute_length=10, max_record_chunk_length=20))

    @ragtrace.rag
    def app(q: str) -> Iterator[str]:
        for _ in range(100_000):
            yield "abcde"

    assert sum(len(p) for p in app("q")) == 500_000
    a = rag_span(exporter).attributes or {}
    assert a[semconv.OUTPUT_VALUE] == "abcdeabcde" + MARKER
    assert take(rag_span(exporter), records).answer == "abcde" * 4


def test_memory_for_huge_inputs_is_bounded_by_the_limits_not_the_input(
    exporter: InMemorySpanExporter, records: RecordStore
) -> None:
    import tracemalloc

    big = "x" * 10_000_000
    many = [{"text": f"chunk {i} " * 50, "id": str(i)} for i in range(10_000)]

    @ragtrace.retrieve
    def huge(q: str) -> list[object]:
        return [big, *many]

    @ragtrace.rag
    def app(q: str) -> str:
        huge(q)
        return big

    tracemalloc.start()
    try:
        app("q")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Input: 10 MB + 10,000 chunks of ~0.5 KB (~5 MB); kept: 256 chunks per span, each cut at 8 KiB
    # for export and 64 KiB for the record. The first chunk alone would be 10 MB if copied whole.
    assert peak < 2_000_000, peak
    record = take(rag_span(exporter), records)
    assert sum(len(t) for t in record.texts) < 65_536 + 256 * 500


def test_exception_messages_follow_the_privacy_switches(exporter: InMemorySpanExporter) -> None:
    @ragtrace.rag
    def failing(q: str) -> str:
        raise KeyError(f"no entry for {q}")

    for settings, expected in (
        (CaptureSettings(capture_content=False), ""),
        (CaptureSettings(redact=lambda s: s.replace("alice", "[user]")), "'no entry for [user]'"),
    ):
        _capture.set_settings(settings)
        exporter.clear()
        with pytest.raises(KeyError):
            failing("alice")
        span = rag_span(exporter)
        [event] = span.events
        assert (event.attributes or {})[semconv.EXCEPTION_MESSAGE] == expected
        assert "alice" not in (span.status.description or "")
        assert (span.status.description or "").startswith("KeyError")


_SSN = "078-05-1120"


def _hide_ssn(text: str) -> str:
    return re.sub(r"\d{3}-\d{2}-\d{4}", "[SSN]", text)


@pytest.mark.parametrize(
    ("settings", "shown"),
    [(CaptureSettings(capture_content=False), ""), (CaptureSettings(redact=_hide_ssn), "[SSN]")],
    ids=["content-off", "redacted"],
)
def test_the_stacktrace_carries_no_exception_text_the_message_would_not(
    exporter: InMemorySpanExporter, settings: CaptureSettings, shown: str
) -> None:
    # The stacktrace used to end with str(exc) whatever the switches: the SSN left in it.
    @ragtrace.rag
    def failing(q: str) -> str:
        try:
            raise LookupError(f"cause: {q}")
        except LookupError as cause:
            error = ValueError(f"no answer for {q}")
            error.add_note(f"note: {q}")
            raise error from cause

    _capture.set_settings(settings)
    with pytest.raises(ValueError):
        failing(f"my SSN is {_SSN}")
    [event] = rag_span(exporter).events
    attributes = event.attributes or {}
    stack = str(attributes[semconv.EXCEPTION_STACKTRACE])
    assert _SSN not in stack
    assert _SSN not in json.dumps(dict(attributes))
    # Still a stacktrace: the frames, both exceptions of the chain, the link between them.
    assert "raise error from cause" in stack
    assert "direct cause" in stack
    assert attributes[semconv.EXCEPTION_TYPE] == "ValueError"
    assert ("ValueError\n" in stack) is (shown == "")
    if shown:
        assert f"ValueError: no answer for my SSN is {shown}" in stack
        assert f"LookupError: cause: my SSN is {shown}" in stack
        assert f"note: my SSN is {shown}" in stack


@pytest.mark.skipif(not hasattr(builtins, "ExceptionGroup"), reason="exception groups are Python 3.11+")
def test_an_exception_group_and_a_cycle_format_without_their_text(exporter: InMemorySpanExporter) -> None:
    group: Any = builtins.ExceptionGroup  # type: ignore[attr-defined,unused-ignore]

    @ragtrace.rag
    def failing(q: str) -> str:
        first = KeyError(q)
        second = RuntimeError(q)
        first.__context__ = second
        second.__context__ = first  # a cycle the chain walk must stop on
        raise group("several", [first, TypeError(q)])

    _capture.set_settings(CaptureSettings(capture_content=False))
    with pytest.raises(group):
        failing(_SSN)
    [event] = rag_span(exporter).events
    stack = str((event.attributes or {})[semconv.EXCEPTION_STACKTRACE])
    assert _SSN not in stack
    assert "| KeyError" in stack
    assert "| TypeError" in stack
