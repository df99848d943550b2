"""ragtrace.evaluate: records from lists and JSONL files, aggregation, worst records, markdown."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

import ragtrace
from ragtrace import ConfigurationError, RagRecord
from ragtrace._evaluate import load_records
from ragtrace.judges import Judge, JudgeError, Verdict
from ragtrace.metrics._registry import build_suite
from ragtrace.metrics._suite import Suite, SuiteResult
from ragtrace.testing import FakeJudge

S, N = Verdict.SUPPORTED, Verdict.NEITHER

GOOD: dict[str, object] = {
    "query": "What is the capital of Peru?",
    "chunks": ["Lima is the capital of Peru."],
    "answer": "Lima.",
}
BAD: dict[str, object] = {
    "question": "Who wrote Hamlet?",
    "contexts": ["Hamlet is a play."],
    "response": "Marlowe wrote Hamlet.",
}


def judge() -> FakeJudge:
    return FakeJudge(
        extract_claims={"Lima.": ["Lima is the capital of Peru"], "Marlowe wrote Hamlet.": ["Marlowe wrote Hamlet"]},
        verify={"Lima is the capital of Peru": [S], "Marlowe wrote Hamlet": [N]},
        rate_chunks={"Lima is the capital of Peru.": 1.0, "Hamlet is a play.": 0.5},
    )


def test_evaluate_aggregates_and_reports_the_worst_records() -> None:
    fake = judge()
    records: list[RagRecord | dict[str, object]] = [GOOD, BAD, RagRecord.of("empty", ["x"], "")]
    result = ragtrace.evaluate(
        records, metrics="faithfulness,hallucination,context_relevance", judge=fake, progress=False
    )
    assert result.count == 3
    assert result.metrics == ("faithfulness", "hallucination", "context_relevance")
    assert result.means["faithfulness"] == pytest.approx(0.5)
    assert result.means["context_relevance"] == pytest.approx(0.75)
    faith = result.summary["faithfulness"]
    assert (faith.measured, faith.total, dict(faith.absent)) == (2, 3, {"no_answer": 1})
    assert (faith.minimum, faith.maximum) == (0.0, 1.0)
    assert result.cost == fake.cost
    assert result.judge == "fake"
    assert not fake.closed  # a judge the caller passed stays open
    worst = result.worst()
    assert [r.index for r in worst] == [2, 1]  # the empty answer first: a failure no score can show
    assert worst[0].empty_answer and worst[0].issues() == []
    assert [s.name for s in worst[1].issues()] == ["faithfulness", "hallucination", "context_relevance"]
    markdown = result.to_markdown()
    assert "| faithfulness | higher | 2/3 | 0.500 | 0.000 | 1.000 | no_answer: 1 |" in markdown
    assert "| # | query | answer | overall | issues |" in markdown
    assert "| 1 | Who wrote Hamlet? | Marlowe wrote Hamlet. | 0.167 |" in markdown
    assert "| 2 | empty | (empty) | - | empty answer |" in markdown
    assert f"judge calls: {fake.count()}" in markdown
    assert "- overall (mean goodness per record): mean 0.583, min 0.167, max 1.000" in markdown


def test_worst_records_are_ordered_worst_first(tmp_path: Path) -> None:
    fake = FakeJudge(rate_chunks=lambda q, chunks: [float(q[-1]) / 10])
    records = [RagRecord.of(f"q{i}", ["c"], "a") for i in (5, 1, 9, 3)]
    result = ragtrace.evaluate(records, metrics=["context_relevance"], judge=fake, progress=False)
    assert [r.index for r in result.worst()] == [1, 3, 0]
    assert [r.index for r in result.worst(n=1)] == [1]


def test_an_empty_answer_is_named_in_the_worst_records_not_hidden_behind_another_score() -> None:
    # Issue 29: such a record showed as a low context relevance with a blank answer cell; the empty answer
    # itself was only the "absent no_answer: 1" of the metrics table.
    fake = FakeJudge(rate_chunks=lambda q, chunks: [0.1 if q == "empty" else 0.9])
    records = [RagRecord.of("fine", ["c"], "an answer"), RagRecord.of("empty", ["c"], "  ")]
    result = ragtrace.evaluate(records, metrics=["faithfulness", "context_relevance"], judge=fake, progress=False)
    markdown = result.to_markdown()
    assert "| 1 | empty | (empty) | 0.100 | empty answer, context_relevance 0.100 |" in markdown
    # An empty answer is listed even when every measured score is fine.
    fine = FakeJudge(rate_chunks=lambda q, chunks: [0.9])
    result = ragtrace.evaluate(records[1:], metrics=["context_relevance"], judge=fine, progress=False)
    assert "| 0 | empty | (empty) | 0.900 | empty answer |" in result.to_markdown()


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_file_with_renamed_fields(tmp_path: Path) -> None:
    file = write_jsonl(
        tmp_path / "halu.jsonl",
        [
            json.dumps({"knowledge": "Lima is the capital of Peru.", "question": GOOD["query"], "bad": "Lima."}),
            "",
            json.dumps({"knowledge": "Hamlet is a play.", "question": BAD["question"], "bad": "Marlowe wrote Hamlet."}),
        ],
    )
    result = ragtrace.evaluate(
        file,
        metrics=["faithfulness"],
        judge=judge(),
        progress=False,
        fields={"chunks": "knowledge", "answer": "bad"},
    )
    assert [r.result.value("faithfulness") for r in result.records] == [1.0, 0.0]


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        # Cut short at the end of the line: the value is missing at column 26, just past the last
        # character, not at "column 1" of the line after it.
        ('{"query": "q", "answer": ', "3:26: not valid JSON (Expecting value)"),
        ('{"query": "q",, "answer": "a"}', "3:15: not valid JSON (Expecting property name"),
        ("  [1, 2]", "3:3: expected a JSON object, got list"),
        ('{"answer": "no query"}', "3:1: a record needs a string 'query'"),
    ],
)
def test_a_bad_line_is_named_by_file_line_and_column(tmp_path: Path, bad_line: str, message: str) -> None:
    file = write_jsonl(tmp_path / "r.jsonl", [json.dumps(GOOD), json.dumps(GOOD), bad_line])
    with pytest.raises(ValueError) as bad:
        ragtrace.evaluate(file, judge=judge(), progress=False)
    assert str(bad.value).startswith(f"{file}:{message}")


def test_a_bad_line_after_a_byte_order_mark_and_crlf_line_ends_has_the_editors_column(tmp_path: Path) -> None:
    file = tmp_path / "r.jsonl"
    file.write_bytes(b'\xef\xbb\xbf{"query": "q", "answer": }\r\n')
    with pytest.raises(ValueError, match=r"r\.jsonl:1:26: not valid JSON \(Expecting value\)$"):
        load_records(file)


def test_bad_lines_can_be_skipped_and_are_listed_in_the_result_and_report(tmp_path: Path) -> None:
    file = write_jsonl(
        tmp_path / "r.jsonl", [json.dumps(GOOD), "", '{"query": "q", "answer": ', json.dumps(BAD), "[1]"]
    )
    result = ragtrace.evaluate(file, metrics=["faithfulness"], judge=judge(), progress=False, strict=False)
    assert [r.record.query for r in result.records] == [GOOD["query"], BAD["question"]]
    assert [r.line for r in result.records] == [1, 4]  # blank and skipped lines counted
    assert [str(b) for b in result.skipped] == [
        f"{file}:3:26: not valid JSON (Expecting value)",
        f"{file}:5:1: expected a JSON object, got list",
    ]
    markdown = result.to_markdown()
    assert "- skipped lines (not records, not scored): 2, listed at the end" in markdown
    assert markdown.endswith(
        f"## Skipped lines (2)\n\n- {file}:3:26: not valid JSON (Expecting value)\n"
        f"- {file}:5:1: expected a JSON object, got list\n"
    )


def test_missing_file_and_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.jsonl"):
        ragtrace.evaluate(tmp_path / "nope.jsonl", judge=judge(), progress=False)
    with pytest.raises(ConfigurationError, match="concurrency"):
        ragtrace.evaluate([GOOD], judge=judge(), concurrency=0)
    with pytest.raises(ConfigurationError, match="unknown metric"):
        ragtrace.evaluate([GOOD], metrics="faithfulnes", judge=judge())
    with pytest.raises(ValueError, match="record 1"):
        ragtrace.evaluate([GOOD, {"answer": "x"}], judge=judge())


def test_an_error_of_the_run_shows_alone_without_a_chained_event_loop_error(tmp_path: Path) -> None:
    # Raised inside "except RuntimeError" it would print "no running event loop" and "During handling
    # of the above exception, another exception occurred" before the real error.
    with pytest.raises(FileNotFoundError) as missing:
        ragtrace.evaluate(tmp_path / "missing.jsonl", judge=judge(), progress=False)
    with pytest.raises(ConfigurationError) as unknown:
        ragtrace.evaluate([GOOD], metrics=["g_eval"], judge=judge(), progress=False)
    for error in (missing.value, unknown.value):
        assert error.__context__ is None
        assert error.__cause__ is None


def test_without_a_judge_the_default_judge_is_used_and_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[FakeJudge] = []

    def fake_default() -> FakeJudge:
        made.append(judge())
        return made[-1]

    default = types.ModuleType("ragtrace.judges._default")
    default.default_judge = fake_default  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ragtrace.judges._default", default)
    result = ragtrace.evaluate([GOOD], metrics=["faithfulness"], progress=False)
    assert result.means["faithfulness"] == 1.0
    assert made[0].closed


def test_without_a_judge_or_a_default_judge_it_asks_for_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ragtrace.judges._default", None)  # as if the module did not exist
    with pytest.raises(ConfigurationError, match="pass judge="):
        ragtrace.evaluate([GOOD], progress=False)


async def test_inside_an_event_loop_use_aevaluate() -> None:
    with pytest.raises(RuntimeError, match="aevaluate"):
        ragtrace.evaluate([GOOD], judge=judge())
    result = await ragtrace.aevaluate([GOOD], metrics=["faithfulness"], judge=judge(), progress=False)
    assert result.means["faithfulness"] == 1.0


def test_progress_bar_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    ragtrace.evaluate([GOOD, BAD], metrics=["faithfulness"], judge=judge(), progress=True)
    captured = capsys.readouterr()
    assert "ragtrace eval" in captured.err
    assert captured.out == ""


def test_concurrency_bounds_records_in_flight() -> None:
    import asyncio

    in_flight = peak = 0

    async def rate(query: str, chunks: list[str]) -> list[float]:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1
        return [1.0]

    records = [RagRecord.of(f"q{i}", ["c"], "a") for i in range(10)]
    ragtrace.evaluate(
        records, metrics=["context_relevance"], judge=FakeJudge(rate_chunks=rate), concurrency=3, progress=False
    )
    assert peak == 3


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"chunks": {"text": "Lima is the capital of Peru."}}, "'chunks' must be a list .* got an object"),
        ({"chunks": 3}, "'chunks' must be a list .* got a number"),
        ({"chunks": [{"text": None}]}, r"chunk 1 needs a string 'text' .* got null"),
        ({"chunks": ["ok", {"id": "d2"}]}, r"chunk 2 needs a string 'text'"),
        ({"chunks": ["ok", ["nested"]]}, "chunk 2 must be a string or an object"),
        ({"chunks": [{"text": "ok", "metadata": [1]}]}, "'chunk 1 metadata' must be a JSON object, got a list"),
        ({"answer": {"text": "Lima."}}, "'answer' must be a string, got an object"),
        ({"reference": ["Lima"]}, "'reference' must be a string, got a list"),
        ({"metadata": [1, 2]}, "'metadata' must be a JSON object, got a list"),
    ],
)
def test_a_record_of_the_wrong_shape_is_named_by_file_and_line(
    tmp_path: Path, fields: dict[str, object], message: str
) -> None:
    file = write_jsonl(tmp_path / "r.jsonl", [json.dumps(GOOD), json.dumps({**GOOD, **fields})])
    with pytest.raises(ValueError, match=rf"r\.jsonl:2:1: {message}"):
        load_records(file)


def test_chunk_text_comes_from_the_first_field_that_is_not_null() -> None:
    record = RagRecord.from_dict(
        {
            "question": None,
            "query": "q",
            "chunks": [{"text": None, "content": "Lima."}, {"page_content": "Cusco.", "score": 0.5}, None, "Peru."],
            "answer": None,
            "response": "Lima.",
            "reference": 42,
        }
    )
    assert record.texts == ["Lima.", "Cusco.", "Peru."]  # a null item carries no chunk
    assert record.chunks[1].score == 0.5
    assert (record.answer, record.reference) == ("Lima.", "42")


def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    file = tmp_path / "latin1.jsonl"
    file.write_bytes(json.dumps(GOOD).encode() + b"\n" + '{"query": "café"}\n'.encode("latin-1"))
    # Column 15 is the character "é" (bytes 1 to 14 are '{"query": "caf').
    with pytest.raises(ValueError, match=r"latin1\.jsonl:2:15: not UTF-8 \(byte 0xe9\)"):
        load_records(file)


def test_a_byte_order_mark_is_allowed_and_a_directory_is_named(tmp_path: Path) -> None:
    file = tmp_path / "bom.jsonl"
    file.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\r\n" + json.dumps(BAD).encode() + b"\r\n")
    assert [r.query for r in load_records(file)] == [GOOD["query"], BAD["question"]]
    with pytest.raises(IsADirectoryError, match="is a directory"):
        load_records(tmp_path)


def test_judge_errors_are_counted_by_type_and_a_run_with_no_score_is_a_judge_failure() -> None:
    # FakeJudge with no script fails each step with error_type "unscripted".
    failed = ragtrace.evaluate([GOOD, BAD], metrics=["faithfulness"], judge=FakeJudge(), progress=False)
    assert dict(failed.summary["faithfulness"].errors) == {"unscripted": 2}
    assert "| faithfulness | higher | 0/2 | - | - | - | judge_error: 2 (unscripted) |" in failed.to_markdown()
    assert (failed.scored, failed.errors, failed.judge_failed) == (0, {"unscripted": 2}, True)
    partial = ragtrace.evaluate(
        [GOOD, {**GOOD, "answer": "Quito."}], metrics=["faithfulness"], judge=judge(), progress=False
    )
    assert (partial.scored, partial.errors, partial.judge_failed) == (1, {"unscripted": 1}, False)
    unmeasured = ragtrace.evaluate([{**GOOD, "chunks": []}], metrics=["faithfulness"], judge=judge(), progress=False)
    assert (unmeasured.scored, unmeasured.errors, unmeasured.judge_failed) == (0, {}, False)
    assert ragtrace.evaluate([], metrics=["faithfulness"], judge=judge(), progress=False).judge_failed is False


def _rate_unless_down(query: str, chunks: list[str]) -> list[float]:
    if query.startswith("down"):
        raise JudgeError(f"cannot reach http://127.0.0.1:9/v1 for {query}", error_type="connection")
    return [1.0] * len(chunks)


def test_the_run_stops_after_records_in_a_row_could_not_reach_the_judge() -> None:
    fake = FakeJudge(rate_chunks=_rate_unless_down)
    # A scored record starts the count again: up, down, down, up, down, down, down -> stop; 3 left.
    queries = ["up0", "down1", "down2", "up3", "down4", "down5", "down6", "up7", "down8", "up9"]
    records = [RagRecord.of(q, ["c"], "a") for q in queries]
    result = ragtrace.evaluate(
        records, metrics=["context_relevance"], judge=fake, concurrency=1, progress=False, max_connection_errors=3
    )
    assert fake.count("rate_chunks") == 7
    assert [r.index for r in result.records] == [0, 1, 2, 3, 4, 5, 6]
    assert (result.count, result.not_scored) == (7, 3)
    assert result.stopped == (
        "3 records in a row could not reach the judge (connection: cannot reach http://127.0.0.1:9/v1 for down6)"
    )
    assert "- records: 7 of 10, stopped early: 3 records in a row could not reach the judge" in result.to_markdown()


def test_records_in_flight_when_the_judge_is_found_unreachable_are_cancelled() -> None:
    import asyncio

    started: list[str] = []
    in_flight = asyncio.Event()

    async def rate(query: str, chunks: list[str]) -> list[float]:
        started.append(query)
        if len(started) == 3:
            in_flight.set()
        if query == "down0":
            await in_flight.wait()  # hang1 and hang2 are in flight
            raise JudgeError("cannot reach it", error_type="connection")
        await asyncio.Event().wait()  # a record that would hang on a dead endpoint
        return [1.0]

    records = [RagRecord.of(q, ["c"], "a") for q in ("down0", "hang1", "hang2", "hang3", "hang4")]
    result = ragtrace.evaluate(
        records,
        metrics=["context_relevance"],
        judge=FakeJudge(rate_chunks=rate),
        concurrency=3,
        progress=False,
        max_connection_errors=1,
    )
    assert started == ["down0", "hang1", "hang2"]  # hang3 and hang4 never started
    assert ([r.index for r in result.records], result.not_scored) == ([0], 4)


def test_other_judge_errors_do_not_stop_the_run_and_none_scores_everything() -> None:
    timeouts = ragtrace.evaluate(
        [GOOD] * 6,
        metrics=["faithfulness"],
        judge=FakeJudge(fail={"extract_claims": "timeout"}),
        progress=False,
        max_connection_errors=2,
    )
    assert (timeouts.count, timeouts.not_scored, timeouts.stopped) == (6, 0, None)
    down = FakeJudge(fail={"extract_claims": "connection"})
    everything = ragtrace.evaluate([GOOD] * 6, metrics=["faithfulness"], judge=down, progress=False)
    assert (everything.count, everything.stopped, down.count("extract_claims")) == (6, None, 6)
    with pytest.raises(ConfigurationError, match="max_connection_errors=0"):
        ragtrace.evaluate([GOOD], judge=judge(), progress=False, max_connection_errors=0)


class _BuggySuite(Suite):
    """A suite with a bug: scoring the record whose query is ``boom`` raises (not a judge error).

    ``before_boom`` is awaited before it raises; ``started`` lists the records it began scoring.
    """

    def __init__(self, before_boom: Callable[[], Awaitable[object]] | None = None) -> None:
        super().__init__(build_suite(["context_relevance"]).metrics)
        self.before_boom = before_boom
        self.started: list[str] = []

    async def score(self, record: RagRecord, judge: Judge) -> SuiteResult:
        self.started.append(record.query)
        if record.query == "boom":
            if self.before_boom is not None:
                await self.before_boom()
            raise RuntimeError("a bug in scoring")
        return await super().score(record, judge)


def test_an_unexpected_error_stops_the_run_before_the_records_left_are_scored() -> None:
    fake = FakeJudge(rate_chunks=lambda q, chunks: [1.0])
    suite = _BuggySuite()
    records = [RagRecord.of(q, ["c"], "a") for q in ("ok0", "boom", "ok2", "ok3", "ok4")]
    with pytest.raises(RuntimeError, match="a bug in scoring"):
        ragtrace.evaluate(records, metrics=suite, judge=fake, concurrency=1, progress=False)
    assert suite.started == ["ok0", "boom"]  # the records after it were never scored
    assert fake.count("rate_chunks") == 1  # nor paid for


def test_an_unexpected_error_cancels_the_records_in_flight() -> None:
    import asyncio

    both_waiting, release = asyncio.Event(), asyncio.Event()
    waiting: list[str] = []
    cancelled: list[str] = []

    async def rate(query: str, chunks: list[str]) -> list[float]:
        if query == "release3":
            release.set()  # only reached when the run goes on after the error
            return [1.0]
        waiting.append(query)
        if len(waiting) == 2:
            both_waiting.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.append(query)
            raise
        return [1.0]

    suite = _BuggySuite(before_boom=both_waiting.wait)  # raises once wait1 and wait2 are in flight
    records = [RagRecord.of(q, ["c"], "a") for q in ("boom", "wait1", "wait2", "release3")]
    fake = FakeJudge(rate_chunks=rate)
    with pytest.raises(RuntimeError, match="a bug in scoring"):
        ragtrace.evaluate(records, metrics=suite, judge=fake, concurrency=3, progress=False)
    assert sorted(cancelled) == ["wait1", "wait2"]
    assert suite.started == ["boom", "wait1", "wait2"]  # release3, waiting for a slot, never started
