"""`ragtrace eval`: end to end against a real OpenAI-compatible HTTP server on 127.0.0.1, and errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.judges import Verdict
from ragtrace.testing import FakeJudge, StubOpenAIServer

HALUEVAL = Path(__file__).resolve().parents[1] / "data" / "halueval_qa_dev20.jsonl"


def scripted_judge() -> FakeJudge:
    """Loaded by ``--judge tests.ragtrace.test_cli:scripted_judge``."""
    return FakeJudge(
        name="scripted",
        extract_claims=lambda text, question=None: [text],
        verify=lambda claims, chunks: [[Verdict.SUPPORTED] * len(chunks) for _ in claims],
    )


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
    # The production suite: per record 4 chat steps and 1 embeddings request, seen by the server.
    assert steps == {
        "extract_claims": 3,
        "verify": 3,
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
        (["--judge", "sometimes"], "use auto, openai, offline or module:factory"),
    ],
)
def test_configuration_errors_exit_2_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    data = tmp_path / "r.jsonl"
    data.write_text(json.dumps({"query": "q"}) + "\n", encoding="utf-8")
    assert main(["eval", str(data), *args, "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_a_bad_line_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "r.jsonl"
    data.write_text('{"query": "q"}\nnot json\n', encoding="utf-8")
    assert main(["eval", str(data), "--judge", "tests.ragtrace.test_cli:scripted_judge", "--no-progress"]) == 2
    assert "line 2: not valid JSON" in capsys.readouterr().err


def test_bad_field_option_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "x.jsonl", "--field", "answer"])
    assert exit_info.value.code == 2


def test_the_module_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace.cli", "eval", "--help"], capture_output=True, text=True, check=True
    )
    assert "--metrics" in done.stdout and "--base-url" in done.stdout


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
