"""`ragtrace eval`: end to end against a real OpenAI-compatible HTTP server on 127.0.0.1, and errors."""

from __future__ import annotations

import contextlib
import csv
import importlib.metadata
import json
import shutil
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ragtrace
from ragtrace import cli
from ragtrace.cli import main
from ragtrace.judges import Verdict
from ragtrace.metrics import PRODUCTION_METRICS
from ragtrace.testing import FakeJudge, StubOpenAIServer, StubReply

HALUEVAL = Path(__file__).resolve().parents[1] / "data" / "halueval_qa_dev20.jsonl"


def scripted_judge() -> FakeJudge:
    """Loaded by ``--judge tests.ragtrace.test_cli:scripted_judge``."""
    return FakeJudge(
        name="scripted",
        extract_claims=lambda text, question=None: [text],
        verify=lambda claims, chunks: [[Verdict.SUPPORTED] * len(chunks) for _ in claims],
    )


def grading_judge() -> FakeJudge:
    """Loaded by ``--judge tests.ragtrace.test_cli:grading_judge``: the answer is one claim, supported if "right"."""
    return FakeJudge(
        name="grading",
        extract_claims=lambda text, question=None: [text],
        verify=lambda claims, chunks: [
            [Verdict.SUPPORTED if "right" in c else Verdict.NEITHER] * len(chunks) for c in claims
        ],
    )


VANISHING_DIRS: list[Path] = []
"""Directories ``vanishing_out_judge`` removes while it scores (a disk that goes away mid-run)."""


def vanishing_out_judge() -> FakeJudge:
    """Loaded by ``--judge tests.ragtrace.test_cli:vanishing_out_judge``."""

    def extract(text: str, question: str | None = None) -> list[str]:
        for directory in VANISHING_DIRS:
            shutil.rmtree(directory, ignore_errors=True)
        return [text]

    return FakeJudge(
        name="vanishing",
        extract_claims=extract,
        verify=lambda claims, chunks: [[Verdict.SUPPORTED] * len(chunks) for _ in claims],
    )


def not_a_judge() -> str:
    return "a string"


def broken_factory() -> FakeJudge:
    raise RuntimeError("no GPU here")


@contextlib.contextmanager
def dead_judge() -> Iterator[str]:
    """The base URL of a judge that is down: a port bound but not listening refuses connections, and
    stays ours while the test runs."""
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{dead.getsockname()[1]}/v1"


def halueval_like(path: Path, n: int = 3) -> Path:
    rows = [
        {
            "knowledge": f"Fact {i}: the river Nile flows north through Egypt.",
            "question": f"Which way does the Nile flow ({i})?",
            "right_answer": "North",
            "hallucinated_answer": f"The Nile flows south. It is {i} km long.",
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_against_an_openai_compatible_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = halueval_like(tmp_path / "dev.jsonl", n=3)
    out = tmp_path / "report.md"
    with StubOpenAIServer() as stub:
        status = main(
            [
                "eval",
                str(data),
                "--base-url",
                stub.base_url,
                "--model",
                "judge-model",
                "--field",
                "chunks=knowledge",
                "--field",
                "answer=hallucinated_answer",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        steps = Counter(r.step for r in stub.requests)
    assert status == 0
    printed = capsys.readouterr().out
    assert printed == out.read_text(encoding="utf-8")
    assert "- records: 3" in printed
    assert "- judge: `openai:judge-model`" in printed
    for name in ("faithfulness", "hallucination", "answer_relevancy_embedding", "context_relevance"):
        assert f"| {name} |" in printed
    # The production suite on a self-hosted endpoint (verify="auto" asks one question per claim): per
    # record the answer's sentences are its claims (no call), one verify_claim call per claim, then
    # rate_chunks, generate_questions and 1 embeddings request, seen by the server.
    verify_calls = steps.pop("verify_claim")
    assert verify_calls >= 3
    assert steps == {
        "generate_questions": 3,
        "rate_chunks": 3,
        None: 3,  # embeddings requests carry no step marker
    }


def test_eval_with_a_judge_factory_and_chosen_metrics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "r.jsonl"
    data.write_text(json.dumps({"query": "q", "chunks": ["c1", "c2"], "answer": "a"}) + "\n", encoding="utf-8")
    status = main(
        [
            "eval",
            str(data),
            "--judge",
            "tests.ragtrace.test_cli:scripted_judge",
            "--metrics",
            "faithfulness,context_precision",
            "--no-progress",
        ]
    )
    printed = capsys.readouterr().out
    assert status == 0
    assert "| faithfulness | higher | 1/1 | 1.000 |" in printed
    assert "| context_precision | higher | 1/1 | 1.000 |" in printed
    assert "- judge: `scripted`" in printed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metrics", "faithfulnes"], "unknown metric 'faithfulnes': choose from"),
        (["--judge", "nowhere:judge"], "cannot load it"),
        (["--judge", "sometimes"], "use auto, openai, offline, tiered or module:factory"),
    ],
)
def test_configuration_errors_exit_2_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    data = tmp_path / "r.jsonl"
    data.write_text(json.dumps({"query": "q"}) + "\n", encoding="utf-8")
    assert main(["eval", str(data), *args, "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def _with_bad_lines(tmp_path: Path) -> Path:
    """Line 1 a record, line 2 cut short, line 3 blank, line 4 a record, line 5 not an object."""
    record = {"query": "q", "chunks": ["c1"], "answer": "a"}
    data = tmp_path / "r.jsonl"
    lines = [json.dumps(record), '{"query": "q", "answer": ', "", json.dumps(record), "[1, 2]"]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return data


def test_bad_lines_are_skipped_and_named_on_stderr_and_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _with_bad_lines(tmp_path)
    args = ["--judge", "tests.ragtrace.test_cli:scripted_judge", "--metrics", "faithfulness", "--no-progress"]
    status = main(["eval", str(data), *args])
    captured = capsys.readouterr()
    assert status == 0
    skipped = "line skipped (--strict makes this an error)"
    assert captured.err.splitlines() == [
        f"ragtrace: warning: {data}:2:26: not valid JSON (Expecting value); {skipped}",
        f"ragtrace: warning: {data}:5:1: expected a JSON object, got list; {skipped}",
    ]
    assert "- records: 2" in captured.out
    assert "| faithfulness | higher | 2/2 | 1.000 |" in captured.out
    assert "- skipped lines (not records, not scored): 2, listed at the end" in captured.out
    assert f"- {data}:2:26: not valid JSON (Expecting value)\n" in captured.out


def test_strict_stops_at_the_first_bad_line_before_any_judge_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _with_bad_lines(tmp_path)
    with StubOpenAIServer() as stub:
        status = main(["eval", str(data), "--base-url", stub.base_url, "--strict", "--no-progress"])
        assert stub.requests == []
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err == f"ragtrace: error: {data}:2:26: not valid JSON (Expecting value)\n"
    assert captured.out == ""


def test_a_file_without_a_single_record_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "r.jsonl"
    data.write_text('{"prompt": "q"}\n{"prompt": "r"}\n', encoding="utf-8")  # forgot --field query=prompt
    with StubOpenAIServer() as stub:
        status = main(["eval", str(data), "--base-url", stub.base_url, "--no-progress"])
        assert stub.requests == []
    assert status == 2
    assert f"ragtrace: error: {data}: no line is a record (2 skipped); is it the right file?" in capsys.readouterr().err


def _graded_file(tmp_path: Path) -> Path:
    """Line 1 right, 2 blank, 3 wrong, 4 not JSON, 5 wrong, 6 right."""
    data = tmp_path / "graded.jsonl"
    lines = [
        json.dumps({"query": "q1", "chunks": ["c"], "answer": "the right answer"}),
        "",
        json.dumps({"query": "q3", "chunks": ["c"], "answer": "a wrong answer"}),
        "{not json",
        json.dumps({"query": "q5", "chunks": ["c"], "answer": "another wrong | answer"}),
        json.dumps({"query": "q6", "chunks": ["c"], "answer": "right again"}),
    ]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return data


def test_the_worst_records_show_their_file_line_and_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _graded_file(tmp_path)
    args = ["--judge", "tests.ragtrace.test_cli:grading_judge", "--metrics", "faithfulness", "--no-progress"]
    assert main(["eval", str(data), *args]) == 0
    printed = capsys.readouterr().out
    assert "| line | query | answer | overall | issues |" in printed
    assert "| 3 | q3 | a wrong answer | 0.000 | faithfulness 0.000 |" in printed
    assert "| 5 | q5 | another wrong \\| answer | 0.000 | faithfulness 0.000 |" in printed


def test_out_writes_every_records_scores_as_jsonl_and_csv_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _graded_file(tmp_path)
    jsonl, table, report = tmp_path / "results.jsonl", tmp_path / "results.CSV", tmp_path / "report.md"
    args = [
        "--judge",
        "tests.ragtrace.test_cli:grading_judge",
        "--metrics",
        "faithfulness,hallucination,context_relevance",
    ]
    outs = ["--out", str(jsonl), "--out", str(table), "--out", str(report)]
    assert main(["eval", str(data), *args, *outs, "--no-progress"]) == 0
    assert report.read_text(encoding="utf-8") == capsys.readouterr().out
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    assert [(r["line"], r["index"], r["query"]) for r in rows] == [
        (1, 0, "q1"),
        (3, 1, "q3"),
        (5, 2, "q5"),
        (6, 3, "q6"),
    ]
    wrong = rows[1]
    assert (wrong["answer"], wrong["overall"]) == ("a wrong answer", 0.0)
    assert wrong["scores"]["faithfulness"] == {
        "direction": "higher",
        "value": 0.0,
        "label": "unfaithful",
        "status": "ok",
        "reason": None,
        "error_type": None,
        "explanation": "0 of 1 claims supported by the chunks",
    }
    assert wrong["scores"]["hallucination"]["direction"] == "lower"
    assert wrong["scores"]["hallucination"]["value"] == 1.0
    absent = wrong["scores"]["context_relevance"]  # the grading judge cannot rate chunks
    assert (absent["value"], absent["status"], absent["reason"], absent["error_type"]) == (
        None,
        "error",
        "judge_error",
        "unscripted",
    )
    assert absent["explanation"].startswith("unscripted: ")
    with table.open(encoding="utf-8", newline="") as handle:
        cells = list(csv.DictReader(handle))
    assert [c["line"] for c in cells] == ["1", "3", "5", "6"]
    assert cells[2]["answer"] == "another wrong | answer"
    assert (cells[2]["faithfulness"], cells[2]["faithfulness.label"], cells[2]["hallucination"]) == (
        "0.0",
        "unfaithful",
        "1.0",
    )
    assert (cells[2]["context_relevance"], cells[2]["context_relevance.reason"]) == ("", "judge_error")
    assert cells[2]["context_relevance.error_type"] == "unscripted"


@pytest.mark.parametrize(
    ("gates", "status", "failed"),
    [
        # The graded file scores faithfulness 1, 0, 0, 1 (mean 0.5) and hallucination 0, 1, 1, 0 (mean 0.5).
        (["faithfulness=0.5", "hallucination=0.5"], 0, []),
        (["faithfulness=0.6"], 3, ["faithfulness mean 0.5 is below 0.6 (--fail-under faithfulness=0.6)"]),
        # Lower is better for hallucination (its class's direction): 0.6 is a bound it stays under.
        (["hallucination=0.6"], 0, []),
        (
            ["hallucination=0.4", "faithfulness=0.9"],
            3,
            [
                "hallucination mean 0.5 is above 0.4, lower is better (--fail-under hallucination=0.4)",
                "faithfulness mean 0.5 is below 0.9 (--fail-under faithfulness=0.9)",
            ],
        ),
        (
            ["context_relevance=0"],
            3,
            ["context_relevance was measured on no record (judge_error: 4) (--fail-under context_relevance=0)"],
        ),
    ],
)
def test_fail_under_gates_the_exit_status_along_each_metrics_direction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: list[str], status: int, failed: list[str]
) -> None:
    data = _graded_file(tmp_path)
    args = [
        "--judge",
        "tests.ragtrace.test_cli:grading_judge",
        "--metrics",
        "faithfulness,hallucination,context_relevance",
    ]
    for gate in gates:
        args += ["--fail-under", gate]
    assert main(["eval", str(data), *args, "--allow-bad-lines", "--no-progress"]) == status  # line 4 is skipped
    captured = capsys.readouterr()
    assert "| faithfulness | higher | 4/4 | 0.500 |" in captured.out  # the report is printed either way
    messages = [line for line in captured.err.splitlines() if "warning: " not in line]
    assert messages == [f"ragtrace: error: quality gate failed: {why}" for why in failed]


@pytest.mark.parametrize(
    ("gates", "failed"),
    [
        (["faithfulness=0.5"], []),  # the gate passes on the 4 records read
        (
            ["faithfulness=0.6"],
            ["quality gate failed: faithfulness mean 0.5 is below 0.6 (--fail-under faithfulness=0.6)"],
        ),
    ],
)
def test_skipped_lines_fail_the_gates_unless_allow_bad_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: list[str], failed: list[str]
) -> None:
    data = _graded_file(tmp_path)  # line 4 is not JSON
    args = ["--judge", "tests.ragtrace.test_cli:grading_judge", "--metrics", "faithfulness", "--no-progress"]
    for gate in gates:
        args += ["--fail-under", gate]
    assert main(["eval", str(data), *args]) == 3
    captured = capsys.readouterr()
    assert "| faithfulness | higher | 4/4 | 0.500 |" in captured.out
    messages = [line for line in captured.err.splitlines() if "warning: " not in line]
    assert messages == [
        *(f"ragtrace: error: {why}" for why in failed),
        f"ragtrace: error: --fail-under: 1 line of {data} is not a record and was not scored (named above and "
        "in the report), so the gates did not see the whole file; fix it, pass --allow-bad-lines to gate on "
        "the records read, or --strict to stop at the first bad line",
    ]
    assert main(["eval", str(data), *args, "--allow-bad-lines"]) == (3 if failed else 0)
    messages = [line for line in capsys.readouterr().err.splitlines() if "warning: " not in line]
    assert messages == [f"ragtrace: error: {why}" for why in failed]
    whole = tmp_path / "whole.jsonl"  # no line skipped
    first_three = data.read_text(encoding="utf-8").splitlines()[:3]
    whole.write_text("".join(line + "\n" for line in first_three), encoding="utf-8")
    assert main(["eval", str(whole), *args]) == (3 if failed else 0)


def test_a_gate_on_a_metric_not_scored_is_a_usage_error_before_any_judge_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _one_record(tmp_path)
    with StubOpenAIServer() as stub:
        args = ["--base-url", stub.base_url, "--metrics", "faithfulness", "--fail-under", "context_recall=0.5"]
        status = main(["eval", str(data), *args, "--no-progress"])
        assert stub.requests == []
    assert status == 2
    assert "--fail-under context_recall=0.5: 'context_recall' is not scored in this run; scored: faithfulness" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("gate", ["faithfulness", "faithfulness=high", "=0.5", "faithfulness=nan"])
def test_a_malformed_gate_is_a_usage_error(capsys: pytest.CaptureFixture[str], gate: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "x.jsonl", "--fail-under", gate])
    assert exit_info.value.code == 2
    assert "write METRIC=VALUE, e.g. faithfulness=0.8" in capsys.readouterr().err


def test_criteria_scores_g_eval_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = halueval_like(tmp_path / "dev.jsonl", n=3)
    criteria = "The answer says which way the Nile flows."
    fields = ["--field", "chunks=knowledge", "--field", "answer=hallucinated_answer"]
    with StubOpenAIServer() as stub:
        args = ["--base-url", stub.base_url, "--criteria", criteria, "--fail-under", "geval=0.1", "--no-progress"]
        status = main(["eval", str(data), *fields, *args])
        steps = Counter(r.step for r in stub.requests)
        asked = [r for r in stub.requests if criteria in json.dumps(r.body)]
    printed = capsys.readouterr().out
    assert status == 0
    assert "| geval | higher | 3/3 |" in printed
    assert "| faithfulness |" not in printed  # choosing what to measure replaces the default suite
    assert steps == {"geval": 1, "geval_score": 3}  # the steps are generated once for the criteria
    assert len(asked) == 4


def test_criteria_beside_metrics_and_geval_without_criteria(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _one_record(tmp_path)
    with StubOpenAIServer() as stub:
        both = ["--metrics", "geval,faithfulness", "--criteria", "The answer is short."]
        assert main(["eval", str(data), "--base-url", stub.base_url, *both, "--no-progress"]) == 0
        printed = capsys.readouterr().out
        assert printed.index("| geval | higher | 1/1 |") < printed.index("| faithfulness | higher | 1/1 |")
        requests = len(stub.requests)
        assert main(["eval", str(data), "--base-url", stub.base_url, "--metrics", "geval", "--no-progress"]) == 2
        assert len(stub.requests) == requests
    assert '--metrics geval needs its criteria: add --criteria "..."' in capsys.readouterr().err


def test_bad_field_option_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "x.jsonl", "--field", "answer"])
    assert exit_info.value.code == 2


def test_the_module_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace.cli", "eval", "--help"], capture_output=True, text=True, check=True
    )
    assert "--metrics" in done.stdout and "--base-url" in done.stdout


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    version = importlib.metadata.version("ragtrace")
    assert version == ragtrace.__version__
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"ragtrace {version}\n"
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace.cli", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout == f"ragtrace {version}\n"


def _add_documented(commands: Any) -> None:
    """A subcommand whose help is written like a docstring, as a registered command's may be."""
    p = commands.add_parser(
        "documented",
        help="print ``RagRecord`` values as JSON",
        description="Reads ``FILE`` and prints each :class:`RagRecord` of it.",
    )
    p.add_argument("--limit", type=int, help="at most ``N`` records (`0` prints none)")


def test_help_is_plain_text_without_rst_markup(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "COMMANDS", [*cli.COMMANDS, _add_documented])
    monkeypatch.setenv("COLUMNS", "120")  # argparse wraps help to the terminal's width
    helps = {}
    for argv in (["--help"], ["eval", "--help"], ["documented", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 0
        helps[argv[0]] = capsys.readouterr().out
    assert all("`" not in text for text in helps.values()), helps
    assert "print RagRecord values as JSON" in helps["--help"]
    assert "Reads FILE and prints each RagRecord of it." in helps["documented"]
    assert "at most N records (0 prints none)" in helps["documented"]
    assert "  3  a --fail-under gate failed\n" in helps["eval"]  # the epilog keeps its lines


def test_eval_on_the_halueval_dev_data(capsys: pytest.CaptureFixture[str]) -> None:
    with StubOpenAIServer() as stub:
        status = main(
            [
                "eval",
                str(HALUEVAL),
                "--base-url",
                stub.base_url,
                "--field",
                "chunks=knowledge",
                "--field",
                "answer=hallucinated_answer",
                "--field",
                "reference=right_answer",
                "--metrics",
                "faithfulness,hallucination,answer_relevancy_embedding,context_relevance,context_recall",
                "--no-progress",
            ]
        )
    printed = capsys.readouterr().out
    assert status == 0
    assert "- records: 20" in printed
    assert "| context_recall | higher | 20/20 |" in printed


def _one_record(tmp_path: Path) -> Path:
    data = tmp_path / "r.jsonl"
    data.write_text(json.dumps({"query": "q", "chunks": ["c1"], "answer": "a"}) + "\n", encoding="utf-8")
    return data


@pytest.mark.parametrize("out", ["no-such-dir/report.md", "."])
def test_an_unwritable_out_fails_before_any_judge_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out: str
) -> None:
    data = _one_record(tmp_path)
    with StubOpenAIServer() as stub:
        status = main(["eval", str(data), "--base-url", stub.base_url, "--out", str(tmp_path / out), "--no-progress"])
        assert stub.requests == []
    assert status == 2
    err = capsys.readouterr().err
    assert "--out" in err and ("cannot write it" in err or "is a directory" in err)


@pytest.mark.parametrize("spelling", ["same path", "dotted path", "symlink", "hard link", "missing input"])
def test_an_out_that_is_the_input_file_is_refused_before_any_judge_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str
) -> None:
    data = _one_record(tmp_path)
    text = data.read_text(encoding="utf-8")
    out = {
        "same path": data,
        "dotted path": tmp_path / "sub" / ".." / data.name,
        "symlink": tmp_path / "link.jsonl",
        "hard link": tmp_path / "hard.jsonl",
        "missing input": data,
    }[spelling]
    (tmp_path / "sub").mkdir()
    if spelling == "symlink":
        out.symlink_to(data)
    elif spelling == "hard link":
        out.hardlink_to(data)
    elif spelling == "missing input":
        data.unlink()
    with StubOpenAIServer() as stub:
        args = ["--base-url", stub.base_url, "--out", str(tmp_path / "ok.md"), "--out", str(out), "--no-progress"]
        status = main(["eval", str(data), *args])
        assert stub.requests == []
    assert status == 2
    assert f"ragtrace: error: --out {out} is the input file {data}: it would be overwritten" in capsys.readouterr().err
    if spelling != "missing input":
        assert data.read_text(encoding="utf-8") == text
    assert not (tmp_path / "ok.md").exists()


def test_checking_out_leaves_no_file_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "r.jsonl"
    data.write_text("not json\n", encoding="utf-8")
    out = tmp_path / "report.md"
    assert main(["eval", str(data), "--judge", "tests.ragtrace.test_cli:scripted_judge", "--out", str(out)]) == 2
    assert not out.exists()


def test_a_report_that_cannot_be_written_at_the_end_is_still_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _one_record(tmp_path)
    out_dir = tmp_path / "reports"
    out_dir.mkdir()
    monkeypatch.setattr(sys.modules[__name__], "VANISHING_DIRS", [out_dir])
    args = ["eval", str(data), "--judge", "tests.ragtrace.test_cli:vanishing_out_judge", "--metrics", "faithfulness"]
    status = main([*args, "--out", str(out_dir / "report.md"), "--no-progress"])
    captured = capsys.readouterr()
    assert status == 1
    assert "| faithfulness | higher | 1/1 | 1.000 |" in captured.out
    assert "the report is on stdout but --out" in captured.err


def test_embedding_model_alone_builds_the_judge_from_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _one_record(tmp_path)
    with StubOpenAIServer() as stub:
        monkeypatch.setenv("RAGTRACE_JUDGE_BASE_URL", stub.base_url)
        status = main(["eval", str(data), "--embedding-model", "nomic-embed-text", "--no-progress"])
        models = {r.body.get("model") for r in stub.embedding_requests}
    assert status == 0
    assert models == {"nomic-embed-text"}


@pytest.mark.parametrize("judge", ["offline", "tests.ragtrace.test_cli:scripted_judge"])
def test_a_judge_that_takes_no_openai_flags_refuses_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judge: str
) -> None:
    data = _one_record(tmp_path)
    with StubOpenAIServer() as stub:
        status = main(["eval", str(data), "--judge", judge, "--base-url", stub.base_url, "--api-key", "sk-x"])
        assert stub.requests == []
    assert status == 2
    assert "does not use --base-url, --api-key: drop them, or use --judge openai" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("tests.ragtrace.test_cli:not_a_judge", "returned str, not a judge"),
        ("tests.ragtrace.test_cli:broken_factory", "the factory raised RuntimeError: no GPU here"),
        ("tests.ragtrace.test_cli:HALUEVAL", "HALUEVAL is not callable"),
    ],
)
def test_a_judge_factory_that_gives_no_judge_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], factory: str, message: str
) -> None:
    data = _one_record(tmp_path)
    assert main(["eval", str(data), "--judge", factory, "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_a_dead_endpoint_exits_1_naming_the_error_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE_MAX_RETRIES", "0")  # the outcome is the same, without the backoff waits
    data = halueval_like(tmp_path / "golden.jsonl", n=3)
    fields = ["--field", "chunks=knowledge", "--field", "answer=hallucinated_answer"]
    with dead_judge() as base_url:
        status = main(["eval", str(data), "--base-url", base_url, "--api-key", "sk-test", *fields, "--no-progress"])
    captured = capsys.readouterr()
    assert status == 1
    assert "| faithfulness | higher | 0/3 | - | - | - | judge_error: 3 (connection) |" in captured.out
    errors = 3 * len(PRODUCTION_METRICS)  # every metric of the suite on every record
    assert f"no record could be scored (judge errors: connection: {errors})" in captured.err


@pytest.mark.parametrize("concurrency", ["1", "8"])
def test_a_dead_judge_stops_the_run_after_5_records_in_a_row_naming_its_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, concurrency: str
) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE_MAX_RETRIES", "0")  # the outcome is the same, without the backoff waits
    data = halueval_like(tmp_path / "golden.jsonl", n=19)
    fields = ["--field", "chunks=knowledge", "--field", "answer=hallucinated_answer"]
    with dead_judge() as base_url:
        args = ["--base-url", base_url, "--api-key", "sk-test", "--concurrency", concurrency, "--no-progress"]
        status = main(["eval", str(data), *fields, *args])
    captured = capsys.readouterr()
    assert status == 1
    # Only the 5 records that failed in a row are in the report; the other 14 were never scored.
    assert "- records: 5 of 19, stopped early: 5 records in a row could not reach the judge" in captured.out
    assert "| faithfulness | higher | 0/5 | - | - | - | judge_error: 5 (connection) |" in captured.out
    assert captured.err.startswith(
        "ragtrace: error: stopped early: 5 records in a row could not reach the judge "
        f"(connection: cannot reach {base_url}/"
    )
    assert "; 14 of 19 records were not scored. Is the judge running" in captured.err


def test_max_connection_errors_0_tries_every_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE_MAX_RETRIES", "0")
    data = halueval_like(tmp_path / "golden.jsonl", n=7)
    args = ["--field", "chunks=knowledge", "--metrics", "context_relevance", "--max-connection-errors", "0"]
    with dead_judge() as base_url:
        status = main(["eval", str(data), "--base-url", base_url, "--api-key", "sk-test", *args, "--no-progress"])
    captured = capsys.readouterr()
    assert status == 1
    assert "| context_relevance | higher | 0/7 | - | - | - | judge_error: 7 (connection) |" in captured.out
    assert "no record could be scored (judge errors: connection: 7)" in captured.err


def test_a_judge_that_refuses_every_call_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = halueval_like(tmp_path / "golden.jsonl", n=3)
    args = ["--field", "chunks=knowledge", "--metrics", "context_relevance", "--no-progress"]
    with StubOpenAIServer() as stub:
        stub.script(*[StubReply(status=401)] * 3)  # 401 is not retried: one reply per record
        status = main(["eval", str(data), "--base-url", stub.base_url, *args])
    captured = capsys.readouterr()
    assert status == 1
    assert "| context_relevance | higher | 0/3 | - | - | - | judge_error: 3 (authentication) |" in captured.out
    assert "no record could be scored (judge errors: authentication: 3)" in captured.err


def test_some_judge_errors_are_counted_by_type_and_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = halueval_like(tmp_path / "golden.jsonl", n=3)
    args = ["--field", "chunks=knowledge", "--metrics", "context_relevance", "--concurrency", "1", "--no-progress"]
    with StubOpenAIServer() as stub:
        stub.script(StubReply(status=401))  # the first record's only call; the others are answered
        status = main(["eval", str(data), "--base-url", stub.base_url, *args])
    captured = capsys.readouterr()
    assert status == 0
    assert "| context_relevance | higher | 2/3 |" in captured.out
    assert "judge_error: 1 (authentication) |" in captured.out
    assert captured.err == ""


def test_judge_tiered_puts_the_openai_flags_on_its_llm_tier() -> None:
    import argparse
    import asyncio

    from ragtrace.cli import _judge_from_args
    from ragtrace.judges import TieredJudge

    flags = {"model": "qwen-0.5b", "embedding_model": None, "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-x"}
    judge = _judge_from_args(argparse.Namespace(judge="tiered", **flags))
    assert isinstance(judge, TieredJudge)
    assert judge.name == "tiered:offline:minilm-int8+openai:qwen-0.5b"
    asyncio.run(judge.aclose())


def test_eval_with_the_tiered_judge_scores_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "r.jsonl"
    record = {"query": "What is the capital of Brazil?", "chunks": ["Brasilia is the capital of Brazil."]}
    data.write_text(json.dumps(record | {"answer": "Brasilia is the capital of Brazil."}) + "\n", encoding="utf-8")
    with StubOpenAIServer() as stub:
        args = ["eval", str(data), "--judge", "tiered", "--base-url", stub.base_url, "--api-key", "sk-x"]
        status = main([*args, "--metrics", "faithfulness", "--no-progress"])
    assert status == 0
    assert "faithfulness" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_an_empty_file_exits_2_like_a_file_of_bad_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    # Issue 29: an empty file exited 0 with "records: 0" while a file of only bad lines exits 2: one rule now.
    data = tmp_path / "empty.jsonl"
    data.write_text(text, encoding="utf-8")
    with StubOpenAIServer() as stub:
        status = main(["eval", str(data), "--base-url", stub.base_url, "--no-progress"])
        assert stub.requests == []
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err == (
        f"ragtrace: error: {data}: the file has no records (it is empty or blank); give a JSONL file with one "
        'record per line, e.g. {"query": ..., "chunks": [...], "answer": ...}\n'
    )
