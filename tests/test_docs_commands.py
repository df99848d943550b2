"""Every shell line of the first-hour documents that installs or starts something can be run as written (issue 29).

The ```sh / ```bash blocks of README.md, docs/quickstart.md, docs/collector.md, docs/integrations.md and
docs/deploy.md are read line by line (comments dropped, ``NAME=value`` prefixes split off), and each command is
checked where it is cheap to check without running it:

* ``pip install``: every path is a directory of this repository with a ``pyproject.toml``, every ``[extra]`` is
  declared there, no ``-e`` (the README's way, so the documents agree), and the collector is installed only with
  (or after, in the same document) the SDK it pins: ``ragtrace`` on PyPI is another project, so
  ``pip install ./collector`` alone fails;
* ``ragtrace`` / ``ragtrace-collector``: the arguments are parsed by the real parser (an unknown option or a
  missing argument fails), and ``serve``'s configuration is validated as the collector does before it starts;
* ``make``: the target is in the Makefile;
* ``python FILE``: the file exists (``my_*.py`` stands for the reader's own app);
* ``NAME=value`` prefixes: a ``RAGTRACE_*`` name is one ``ragtrace.environment_variables`` defines.

A command of another kind fails the test, so a new line in these documents is either checked here or named.

A real ``pip install ./ ./collector`` into a fresh venv is not a test: it took 80 s here with pip's cache warm
(two shared cores), too slow for ``make test``; ``pip install ./collector`` alone fails in 7 s with "No matching
distribution found for ragtrace==0.1.0", the mistake the order check below catches without a venv.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragtrace import environment_variables

if sys.version_info >= (3, 11):
    import tomllib
else:  # the collector's dependency on Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "docs/quickstart.md", "docs/collector.md", "docs/integrations.md", "docs/deploy.md")
SDK = ROOT
COLLECTOR = ROOT / "collector"

_BLOCK = re.compile(r"^```(?:sh|bash|shell|console)\n(.*?)^```", re.DOTALL | re.MULTILINE)
_ASSIGNMENT = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")
_PACKAGE = re.compile(r"^(?P<path>[^\[]+?)(?:\[(?P<extras>[^\]]*)\])?$")


@dataclass(frozen=True)
class Line:
    """One command of a shell block: where it is, its ``NAME=value`` prefixes and its words, every optional
    ``[--option VALUE]`` group included; ``required`` leaves those groups out (both forms must run)."""

    document: str
    number: int
    environment: dict[str, str]
    words: list[str]
    required: list[str] | None = None

    def __str__(self) -> str:
        prefix = "".join(f"{name}={value} " for name, value in self.environment.items())
        return f"{self.document}:{self.number}: {prefix}{shlex.join(self.words)}"


def shell_lines(document: str) -> list[Line]:
    """The commands of ``document``'s shell blocks, in order, with their line numbers in the file."""
    text = (ROOT / document).read_text(encoding="utf-8")
    lines = []
    for block in _BLOCK.finditer(text):
        first = text.count("\n", 0, block.start(1)) + 1
        for offset, raw in enumerate(block.group(1).splitlines()):
            words = shlex.split(raw, comments=True)
            environment = {}
            while words and (assignment := _ASSIGNMENT.match(words[0])):
                environment[assignment.group(1)] = assignment.group(2)
                words = words[1:]
            if words:
                every, required = _optional_groups(words)
                lines.append(Line(document, first + offset, environment, every, required))
    return lines


def _optional_groups(words: list[str]) -> tuple[list[str], list[str]]:
    """``words`` with the brackets of each ``[--option VALUE]`` group taken off, and without those groups."""
    every: list[str] = []
    required: list[str] = []
    depth = 0
    for word in words:
        opens = word.startswith("[") and not depth
        depth += opens
        bare = word[1:] if opens else word
        closes = depth and bare.endswith("]")
        bare = bare[:-1] if closes else bare
        every.append(bare)
        if not depth:
            required.append(bare)
        depth -= bool(closes)
    return every, required


ALL_LINES = [line for document in DOCUMENTS for line in shell_lines(document)]


def test_the_documents_have_the_lines_this_test_checks() -> None:
    # A block renamed to ```text (or the documents moved) would make every other test here pass on nothing.
    commands = {line.words[0] for line in ALL_LINES}
    assert {"pip", "ragtrace-collector", "make", "python"} <= commands
    assert {line.document for line in ALL_LINES} == set(DOCUMENTS)


def _declared_extras(project: Path) -> set[str]:
    data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    return set(data["project"].get("optional-dependencies", {}))


def _installs(line: Line) -> list[tuple[Path, set[str]]]:
    """The projects a ``pip install`` line installs, with the extras asked for; fails on what is not a project."""
    assert line.words[:2] == ["pip", "install"], line
    projects = []
    for word in line.words[2:]:
        assert word not in ("-e", "--editable"), f"{line}: install as the README does, without -e"
        assert not word.startswith("-"), f"{line}: option {word} is not checked by this test"
        match = _PACKAGE.match(word)
        assert match is not None, f"{line}: {word!r} is not PATH or PATH[extras]"
        project = (ROOT / match.group("path")).resolve()
        assert (project / "pyproject.toml").is_file(), f"{line}: {match.group('path')} is not a project here"
        extras = {extra.strip() for extra in (match.group("extras") or "").split(",") if extra.strip()}
        unknown = extras - _declared_extras(project)
        assert not unknown, f"{line}: extras {sorted(unknown)} are not declared in {project / 'pyproject.toml'}"
        projects.append((project, extras))
    assert projects, f"{line}: installs nothing"
    return projects


def check_install_order(lines: list[Line]) -> None:
    """Each ``pip install`` of ``lines`` (one document, in order) installs the collector only with or after the
    SDK: the collector pins ``ragtrace==`` its version, which only this repository has (PyPI's is another
    project)."""
    sdk_installed = False
    for line in lines:
        if line.words[0] != "pip":
            continue
        projects = {project for project, _ in _installs(line)}
        sdk_installed = sdk_installed or SDK in projects
        if COLLECTOR in projects:
            assert sdk_installed, f"{line}: the collector needs the SDK in the same command or before it (./)"


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_pip_install_line_installs_projects_of_this_repository_in_an_order_pip_can_resolve(
    document: str,
) -> None:
    check_install_order(shell_lines(document))


@pytest.mark.parametrize(
    ("words", "why"),
    [
        (["pip", "install", "./collector"], "the collector needs the SDK"),  # docs/collector.md before issue 29
        (["pip", "install", "-e", "."], "without -e"),  # docs/quickstart.md before issue 29
        (["pip", "install", "./[nope]"], "not declared"),
        (["pip", "install", "./nowhere"], "not a project"),
    ],
)
def test_the_install_check_refuses_what_would_fail_or_disagree(words: list[str], why: str) -> None:
    with pytest.raises(AssertionError, match=re.escape(why)):
        check_install_order([Line("doc.md", 1, {}, words)])


def _check_ragtrace_collector(line: Line) -> None:
    from ragtrace_collector.__main__ import build_parser, serve_config

    try:
        args = build_parser().parse_args(line.words[1:])
    except SystemExit as exit:
        pytest.fail(f"{line}: ragtrace-collector refuses these arguments (exit {exit.code})")
    if args.command == "serve":
        if args.rules is not None:
            args.rules.write_text("")  # the reader's own rules file (an empty one is the built-in rules)
        serve_config(args).validate()  # what the collector checks before anything starts


def _check_ragtrace(line: Line) -> None:
    from ragtrace.cli import build_parser

    try:
        build_parser().parse_args(line.words[1:])
    except SystemExit as exit:
        pytest.fail(f"{line}: ragtrace refuses these arguments (exit {exit.code})")


def _check_make(line: Line) -> None:
    targets = set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE))
    missing = set(line.words[1:]) - targets
    assert not missing, f"{line}: no Makefile target {sorted(missing)}"


def _check_python(line: Line) -> None:
    script = line.words[1]
    if script == "-m":
        module = line.words[2].replace(".", "/")
        assert (ROOT / module).is_dir() or (ROOT / f"{module}.py").is_file(), f"{line}: no module {line.words[2]}"
    elif not Path(script).name.startswith("my_"):  # my_rag_app.py: the reader's own app
        assert (ROOT / script).is_file(), f"{line}: no file {script}"


def _check_haproxy(line: Line) -> None:
    """The config the line names exists and, where haproxy is installed, is valid with addresses in its variables."""
    config = ROOT / line.words[line.words.index("-f") + 1]
    assert config.is_file(), f"{line}: no file {config}"
    binary = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)
    if binary is None:
        return
    addresses = re.findall(r"\$\{(RAGTRACE_\w+)\}", config.read_text(encoding="utf-8"))
    env = {**os.environ, **{name: f"127.0.0.1:{10000 + i}" for i, name in enumerate(sorted(set(addresses)))}}
    checked = subprocess.run([binary, "-c", "-f", str(config)], capture_output=True, text=True, env=env)
    assert checked.returncode == 0, f"{line}: {checked.stdout}{checked.stderr}"


CHECKS = {
    "haproxy": _check_haproxy,
    "ragtrace-collector": _check_ragtrace_collector,
    "ragtrace": _check_ragtrace,
    "make": _check_make,
    "python": _check_python,
    "pip": _installs,
}


@pytest.mark.parametrize("line", ALL_LINES, ids=str)
def test_every_command_runs_as_written(line: Line, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative --db paths land in a directory that exists, as in a fresh checkout
    for name in line.environment:
        if name.startswith("RAGTRACE_"):
            assert hasattr(environment_variables, name), f"{line}: {name} is not a ragtrace variable"
    assert line.words[0] in CHECKS, f"{line}: a command this test does not know; check it here"
    CHECKS[line.words[0]](line)
    if line.required is not None and line.required != line.words:
        CHECKS[line.words[0]](Line(line.document, line.number, line.environment, line.required))


def test_a_missing_option_or_directory_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The checks are not vacuous: the issue's `alerts list --url X` and a --db in a missing directory fail them.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pytest.fail.Exception):
        _check_ragtrace_collector(Line("doc.md", 1, {}, ["ragtrace-collector", "serve", "--dbb", "x.db"]))
    with pytest.raises(Exception, match="does not exist"):
        _check_ragtrace_collector(Line("doc.md", 1, {}, ["ragtrace-collector", "serve", "--db", "no/dir/x.db"]))
    with pytest.raises(pytest.fail.Exception):
        _check_ragtrace(Line("doc.md", 1, {}, ["ragtrace", "eval"]))
