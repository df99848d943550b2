"""Named people (issue 25): ``serve --users-file`` and ``ragtrace-collector users add``. A wrong line of the file
stops the start naming the line; a wrong password or an unknown name signs nobody in; a signed-in person's acks,
silences and reviews record their name whatever the body says; the password is never written or logged; a person
taken out of the file is signed out at the restart. Real collectors over real HTTP."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from ragtrace_collector.__main__ import main
from ragtrace_collector._config import CollectorConfig
from ragtrace_collector._http._users import hash_password, read_users, users_text

from ragtrace import ConfigurationError
from tests.collector._spans import start_collector
from tests.collector.test_alert_panel_chromium import NS, RULES, _send_spike

PASSWORD = "correct horse battery"
GOOD = f"ana:{hash_password(PASSWORD).text()}"


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        (["# people", "", GOOD, "bo"], "line 4: not NAME:HASH"),
        (["bad name:" + GOOD.split(":", 1)[1]], "line 1: the name must be 1 to 64 characters"),
        ([GOOD, "# again", GOOD], "line 3: ana is in the file twice"),
        (["ana:md5$abc"], "line 1 (ana): the hash is not scrypt$N$R$P$SALT$KEY"),
        (["ana:scrypt$16384$8$1$!!$AAAA"], "line 1 (ana): the hash's costs or its salt and key do not parse"),
        (["ana:scrypt$1000$8$1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAA"], "line 1 (ana): the hash's costs N=1000"),
        (["# nobody yet"], "no one in it"),
    ],
)
def test_a_wrong_line_is_named(tmp_path: Path, lines: list[str], says: str) -> None:
    users = tmp_path / "users.txt"
    users.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        read_users(users)
    assert f"--users-file {users}" in str(caught.value) and says in str(caught.value)
    # serve stops before anything starts, with status 2 and the same line.
    config = CollectorConfig(db=tmp_path / "c.db", admin_token="ad-456", users_file=users)
    with pytest.raises(ConfigurationError, match=says.replace("$", r"\$").replace("(", r"\(").replace(")", r"\)")):
        config.validate()


def test_a_users_file_needs_an_admin_token(tmp_path: Path) -> None:
    users = tmp_path / "users.txt"
    users.write_text(GOOD + "\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="--users-file needs an admin token"):
        CollectorConfig(db=tmp_path / "c.db", users_file=users).validate()


def test_a_password_checks_and_a_wrong_one_or_an_unknown_name_does_not(tmp_path: Path) -> None:
    users = tmp_path / "users.txt"
    users.write_text(GOOD + "\n", encoding="utf-8")
    people = read_users(users)
    assert people.check("ana", PASSWORD) == "ana"
    assert people.check("ana", PASSWORD + "x") is None
    assert people.check("ana", "") is None
    assert people.check("bo", PASSWORD) is None
    # Two hashes of one password differ (a salt each), and neither holds it.
    assert hash_password(PASSWORD).text() != hash_password(PASSWORD).text()
    assert PASSWORD not in users.read_text(encoding="utf-8")


def test_users_add_writes_and_replaces_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    users = tmp_path / "users.txt"
    monkeypatch.setattr(sys, "stdin", io.StringIO(PASSWORD + "\n"))
    assert main(["users", "add", "ana", "--file", str(users)]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("another password\n"))
    assert main(["users", "add", "bo", "--file", str(users)]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("a new password\n"))
    assert main(["users", "add", "ana", "--file", str(users)]) == 0  # ana's password changed, her line kept first
    text = users.read_text(encoding="utf-8")
    assert [line.split(":")[0] for line in text.splitlines()] == ["ana", "bo"]
    assert users.stat().st_mode & 0o077 == 0  # readable by its owner only
    people = read_users(users)
    assert people.check("ana", "a new password") == "ana" and people.check("ana", PASSWORD) is None
    assert people.check("bo", "another password") == "bo"
    out = capsys.readouterr()
    for secret in (PASSWORD, "another password", "a new password"):
        assert secret not in out.out + out.err + text
    monkeypatch.setattr(sys, "stdin", io.StringIO("short\n"))
    assert main(["users", "add", "cy", "--file", str(users)]) == 2
    assert "shorter than 8 characters; nothing written" in capsys.readouterr().err
    assert read_users(users).check("cy", "short") is None
    assert main(["users", "add", "a:b", "--file", str(users)]) == 2


def test_users_add_reads_standard_input_from_a_pipe(tmp_path: Path) -> None:
    """The real command, as a script runs it: the password on standard input, never in an argument."""
    users = tmp_path / "users.txt"
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace_collector", "users", "add", "ana", "--file", str(users)],
        input=PASSWORD + "\n", capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    assert read_users(users).check("ana", PASSWORD) == "ana"


def test_signed_in_by_name_acks_silences_and_reviews_record_who(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    users = tmp_path / "users.txt"
    users.write_text(f"{GOOD}\nbo:{hash_password('bo password').text()}\n", encoding="utf-8")
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    collector = start_collector(tmp_path / "c.db", page=True, watch=True, rules=rules, token="s3cret",
                                users_file=users)  # fmt: skip
    try:
        base = f"http://127.0.0.1:{collector.http_port}"
        now = time.time_ns() - 60 * NS
        _send_spike(collector.http_port or 0, now)
        collector.watcher.evaluate_once(now)
        with httpx.Client(base_url=base, timeout=60) as browser:
            form = browser.get("/signin?next=/records")
            assert 'name="name"' in form.text and 'type="password" name="password"' in form.text
            assert 'name="token"' not in form.text
            for name, password in (("ana", "wrong password"), ("nobody", PASSWORD), ("ana", ""), ("", "")):
                wrong = browser.post("/signin", data={"name": name, "password": password, "next": "/records"})
                assert wrong.status_code == 401 and "That name and password do not match." in wrong.text
                assert "ragtrace_session" not in browser.cookies and PASSWORD not in wrong.text
            assert browser.post("/signin", data={"token": "s3cret"}).status_code == 401  # the form wants a name
            signed = browser.post("/signin", data={"name": "ana", "password": PASSWORD, "next": "/records"})
            assert signed.status_code == 303 and signed.headers["location"] == "/records"
            cookie = next(v for k, v in signed.headers.multi_items() if k == "set-cookie" and "ragtrace_session" in v)
            assert PASSWORD not in cookie
            page = browser.get("/records")
            assert page.status_code == 200
            (record,) = {r["span_id"] for r in browser.get("/api/records?limit=1").json()["records"]}
            csrf = {"origin": base, "sec-fetch-site": "same-origin", "x-csrf-token": browser.cookies["ragtrace_csrf"]}
            said = {"author": "mallory"}  # what a body says is not who did it
            group = {"rule": "hallucination-spike", "service": "shop"}
            ack = browser.post("/api/alerts/ack", json={**group, **said}, headers=csrf)
            assert ack.status_code == 201 and ack.json()["ack"]["author"] == "ana"
            silence = browser.post("/api/silences", json={**group, **said, "duration": "1h"}, headers=csrf)
            assert silence.status_code == 201 and silence.json()["silence"]["author"] == "ana"
            review = browser.post("/api/reviews", json={"span_id": record, "grounded": False, **said}, headers=csrf)
            assert review.status_code == 201 and review.json()["review"]["author"] == "ana"
            stored = browser.get(f"/api/reviews?span_id={record}").json()["reviews"]
            assert [r["author"] for r in stored] == ["ana"]
            # The pages say who, too.
            assert "acknowledged by ana at " in browser.get("/").text
        # The admin token still works for scripts; its changes name nobody unless the body does.
        scripted = httpx.post(
            f"{base}/api/silences",
            json={"rule": "hallucination-spike", "duration": "1h", "author": "a script"},
            headers={"authorization": "Bearer s3cret"},
            timeout=60,
        )
        assert scripted.status_code == 201 and scripted.json()["silence"]["author"] == "a script"
        session = browser.cookies["ragtrace_session"]
    finally:
        collector.stop()
    assert PASSWORD not in caplog.text and "bo password" not in caplog.text

    # Taken out of the file: the next start no longer takes ana's session; bo's password still signs bo in.
    users.write_text(f"bo:{hash_password('bo password').text()}\n", encoding="utf-8")
    again = start_collector(tmp_path / "c.db", page=True, token="s3cret", users_file=users)
    try:
        base = f"http://127.0.0.1:{again.http_port}"
        with httpx.Client(base_url=base, timeout=60, cookies={"ragtrace_session": session}) as browser:
            assert browser.get("/api/records").status_code == 401
            signed = browser.post("/signin", data={"name": "bo", "password": "bo password", "next": "/"})
            assert signed.status_code == 303 and browser.get("/api/records").status_code == 200
    finally:
        again.stop()


def test_users_text_keeps_comments_and_other_people() -> None:
    hashed = hash_password(PASSWORD)
    text = users_text("# team\nbo:x\nana:old\nana:older\n", "ana", hashed)
    assert text == f"# team\nbo:x\nana:{hashed.text()}\n"
