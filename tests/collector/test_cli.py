"""The ``ragtrace-collector`` command: mistakes end in one clear line and an exit status, never a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from ragtrace_collector.__main__ import main
from ragtrace_collector._server import CollectorConfig
from ragtrace_collector._store import Store

from ragtrace.environment_variables import ConfigurationError


def _one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_report_of_a_file_that_is_not_a_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just words long enough to fill the header page of a file\n" * 20)
    assert main(["report", "--db", str(text), "--out", str(tmp_path / "r.html")]) == 1
    line = _one_line(capsys.readouterr().err)
    assert str(text) in line and "not a database" in line


def test_serve_with_a_directory_as_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--db", str(tmp_path), "--port", "0", "--grpc-port", "-1", "--decode-processes", "0"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert str(tmp_path) in line and "SQLite file" in line


def test_serve_on_a_busy_port_leaves_no_new_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "new.db"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        args = ["serve", "--db", str(db), "--port", str(port), "--grpc-port", "-1", "--decode-processes", "0"]
        assert main(args) == 1
    line = _one_line(capsys.readouterr().err)
    assert f"127.0.0.1:{port}" in line
    assert not db.exists()


@pytest.mark.parametrize(("name", "starts"), [("report.md", "# ragtrace report"), ("report.html", "<!DOCTYPE html>")])
def test_report_picks_the_format_from_the_out_suffix(tmp_path: Path, name: str, starts: str) -> None:
    db = tmp_path / "c.db"
    Store(db).close()
    out = tmp_path / name
    assert main(["report", "--db", str(db), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith(starts)


def test_format_overrides_the_suffix(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    Store(db).close()
    out = tmp_path / "report.md"
    assert main(["report", "--db", str(db), "--out", str(out), "--format", "html"]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("days", ["nan", "inf", "-inf", "0", "-1", "1e300"])
def test_retention_days_must_be_a_usable_number(tmp_path: Path, capsys: pytest.CaptureFixture[str], days: str) -> None:
    # --rules names a missing file, checked after the retention: were the days let through, the command would
    # stop on the rules (a failed assertion below) rather than serve forever.
    argv = ["serve", "--db", str(tmp_path / "c.db"), f"--retention-days={days}", "--rules", str(tmp_path / "none")]
    assert main(argv) == 2
    assert "--retention-days" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "c.db").exists()  # refused before anything was opened
    with pytest.raises(ConfigurationError, match="positive number of days"):
        CollectorConfig(db=tmp_path / "c.db", retention_days=float(days)).validate()
    CollectorConfig(db=tmp_path / "c.db", retention_days=30.0).validate()
