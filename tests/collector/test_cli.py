"""The ``ragtrace-collector`` command: mistakes end in one clear line and an exit status, never a traceback."""

from __future__ import annotations

import importlib.metadata
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import ragtrace_collector
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector.__main__ import main
from ragtrace_collector._address import host_port, page_url
from ragtrace_collector._server import CollectorConfig
from ragtrace_collector._store import Store

from ragtrace.environment_variables import ConfigurationError
from tests.collector._ports import free_port
from tests.collector._spans import SpanFactory, start_collector
from tests.collector._stores import count


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


def test_serve_with_a_db_in_a_missing_directory_refuses_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 29: the directory used to be created and the collector served into a store nobody would look at.
    # --rules names a missing file, checked after --db: were the path let through, the command would stop on
    # the rules (a failed assertion below) rather than serve forever.
    db = tmp_path / "nonexistent" / "dir" / "x.db"
    assert main(["serve", "--db", str(db), "--rules", str(tmp_path / "none")]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"ragtrace-collector: --db {db}: the directory {db.parent} does not exist; create it first "
        f"(mkdir -p {db.parent}) or give a --db path in an existing directory"
    )
    assert not (tmp_path / "nonexistent").exists()


@pytest.mark.parametrize("under", ["x.db", "sub/x.db"])
def test_serve_with_a_db_under_a_file_names_db_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], under: str
) -> None:
    # Issue 29: this printed "[Errno 17] File exists: ..." without naming --db or the fix.
    file = tmp_path / "afile"
    file.write_text("")
    db = file / under
    assert main(["serve", "--db", str(db), "--rules", str(tmp_path / "none")]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"ragtrace-collector: --db {db}: {file} is a file, not a directory; give a --db path inside a directory"
    )
    with pytest.raises(ConfigurationError, match="is a file, not a directory"):
        CollectorConfig(db=db).validate()
    CollectorConfig(db=tmp_path / "new.db").validate()  # a new file in a directory that exists is fine


@pytest.mark.parametrize(("option", "other"), [("--port", "--grpc-port"), ("--grpc-port", "--port")])
def test_serve_on_a_busy_port_names_the_option_to_change_and_leaves_no_new_db(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], option: str, other: str
) -> None:
    db = tmp_path / "new.db"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        args = ["serve", "--db", str(db), option, str(port), other, "0", "--decode-processes", "0", "--no-score"]
        assert main(args) == 1
    # capfd: what gRPC's C core would write to stderr of its own counts too.
    line = _one_line(capfd.readouterr().err)
    assert f"127.0.0.1:{port}: the port is in use" in line
    assert f"choose another port with {option} (0 picks a free one" in line
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


def _ipv6_loopback_missing() -> str | None:
    """Why this machine cannot serve on ::1, or None when it can."""
    if not socket.has_ipv6:
        return "this Python has no IPv6 support (socket.has_ipv6 is False)"
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:
        return f"the OS offers no IPv6 loopback: binding ::1 failed ({exc})"
    return None


def test_version_is_the_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"ragtrace-collector {importlib.metadata.version('ragtrace-collector')}\n"
    assert ragtrace_collector.__version__ == importlib.metadata.version("ragtrace-collector")


@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"], ["report", "--help"]])
def test_help_is_plain_text(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage: ragtrace-collector")
    assert "``" not in shown and ":class:" not in shown  # reStructuredText is for docstrings, not a terminal


def _first_line(process: subprocess.Popen[bytes]) -> str:
    """The first line the process writes to stdout; "" if it writes none within two minutes (a safety bound
    for a loaded machine, not a timing check: a collector that never announces its page fails here, not hangs)."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout=120):
            return ""
    return process.stdout.readline().decode()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_serve_prints_the_page_url_and_the_page_is_there(tmp_path: Path, host: str) -> None:
    if host == "::1" and (missing := _ipv6_loopback_missing()):
        pytest.skip(missing)
    argv = [sys.executable, "-m", "ragtrace_collector", "serve", "--db", str(tmp_path / "c.db"), "--host", host,
            "--port", "0", "--grpc-port", "0", "--decode-processes", "0", "--no-score"]  # fmt: skip
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr) as serving:
        try:
            line = _first_line(serving)  # printed once both receivers listen
            bracketed = "[::1]" if host == "::1" else host
            match = re.fullmatch(rf"ragtrace collector: page at (http://{re.escape(bracketed)}:\d+/)\n", line)
            assert match, (line, log.read_text())
            page = httpx.get(match.group(1), timeout=60)
            assert page.status_code == 200
            assert page.headers["content-type"].startswith("text/html")
        finally:
            serving.send_signal(signal.SIGTERM)
            assert serving.wait(timeout=60) == 0
    assert "Traceback" not in log.read_text()


def test_an_ipv6_loopback_host_serves_otlp_over_http_and_grpc(tmp_path: Path) -> None:
    if missing := _ipv6_loopback_missing():
        pytest.skip(missing)
    running = start_collector(tmp_path / "c.db", host="::1")
    try:
        factory = SpanFactory()
        factory.rag(query="over http")
        http = HttpSpanExporter(endpoint=f"http://[::1]:{running.http_port}/v1/traces")
        grpc_exporter = GrpcSpanExporter(endpoint=f"[::1]:{running.grpc_port}", insecure=True)
        try:
            assert http.export(factory.all()) is SpanExportResult.SUCCESS
            factory.rag(query="over grpc")
            assert grpc_exporter.export(factory.all()[-2:]) is SpanExportResult.SUCCESS
        finally:
            http.shutdown()
            grpc_exporter.shutdown()
        assert count(running.config.db, "rag_records") == 2
        assert running.page_url is None  # the page is off in start_collector
    finally:
        running.stop()


@pytest.mark.parametrize(
    ("host", "url", "address"),
    [
        ("127.0.0.1", "http://127.0.0.1:4318/", "127.0.0.1:4317"),
        ("::1", "http://[::1]:4318/", "[::1]:4317"),
        ("[::1]", "http://[::1]:4318/", "[::1]:4317"),
        ("0.0.0.0", "http://127.0.0.1:4318/", "0.0.0.0:4317"),
        ("::", "http://[::1]:4318/", "[::]:4317"),
        ("localhost", "http://localhost:4318/", "localhost:4317"),
    ],
)
def test_the_page_url_and_the_grpc_address_bracket_ipv6_literals(host: str, url: str, address: str) -> None:
    assert page_url(host, 4318) == url
    assert host_port(host, 4317) == address


def test_serve_with_an_unreachable_store_says_so_without_its_password(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"postgresql://ragtrace:s3cretpw@127.0.0.1:{free_port()}/ragtrace"
    assert main(["serve", "--store", url, "--port", "0", "--grpc-port", "-1"]) == 1
    err = capsys.readouterr().err
    assert "could not connect" in err and "check the URL, that PostgreSQL runs there" in err
    assert "ragtrace:***@127.0.0.1" in err and "s3cretpw" not in err


def test_serve_takes_one_store_and_only_a_postgresql_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    both = ["serve", "--db", str(tmp_path / "c.db"), "--store", "postgresql://u@127.0.0.1/x", "--port", "0"]
    assert main(both) == 2
    assert "--db FILE (a SQLite file, one machine) or --store postgresql://" in capsys.readouterr().err
    assert main(["serve", "--port", "0"]) == 2  # neither
    assert main(["serve", "--store", "mysql://u:pw@127.0.0.1/x", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "not a PostgreSQL URL" in err and "pw@" not in err


def test_serve_on_a_database_the_user_may_not_create_tables_in_names_the_grant(
    postgres_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres_server.database()
    postgres_server.psql(url, "CREATE ROLE ragtrace_reader LOGIN")
    reader_url = url.replace(f"{postgres_server.user}@", "ragtrace_reader@")
    assert main(["serve", "--store", reader_url, "--port", "0", "--grpc-port", "-1"]) == 1
    assert "GRANT CREATE ON SCHEMA public" in capsys.readouterr().err


@pytest.mark.slow
def test_postgresql_going_away_mid_load_refuses_then_recovers_and_loses_nothing_acknowledged(tmp_path: Path) -> None:
    """The store's server stops (as if it crashed) while an app exports: the collector answers 503 meanwhile (the
    exporter retries), takes requests again once it is back, and every export that got a 200 is stored."""
    import httpx

    from tests.collector._postgres import postgres_bin, running_postgres
    from tests.collector._spans import SpanFactory, hex_span_id, otlp_bytes, start_collector

    if postgres_bin() is None:
        pytest.skip("Debian's PostgreSQL is not installed: run `make system-deps`")
    with running_postgres() as server:  # a server of its own: this test stops it
        url = server.database()
        running = start_collector(url)
        acked: list[str] = []
        statuses: list[int] = []

        def export() -> int:
            factory = SpanFactory(service="shop")
            for _ in range(5):
                factory.rag(scores={"faithfulness": 0.9}, decision="evaluated")
            spans = factory.all()
            reply = httpx.post(
                f"http://127.0.0.1:{running.http_port}/v1/traces",
                content=otlp_bytes(spans),
                headers={"Content-Type": "application/x-protobuf"},
                timeout=60,
            )
            statuses.append(reply.status_code)
            if reply.status_code == 200:
                acked.extend(hex_span_id(s) for s in spans)
            return reply.status_code

        try:
            assert export() == 200
            server.stop()
            refused = export()
            assert refused == 503  # retryable in OTLP: the exporter sends it again later
            server.start()
            deadline = time.monotonic() + 60
            while export() != 200:  # the pool's broken connections are replaced as they fail
                assert time.monotonic() < deadline, f"the collector did not recover: {statuses}"
                time.sleep(0.2)
        finally:
            running.stop()
        stored = {row[0] for row in server.psql(url, "SELECT span_id FROM spans")}
    assert set(acked) <= stored and len(acked) >= 2 * 10
