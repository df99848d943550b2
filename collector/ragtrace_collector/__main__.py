"""``ragtrace-collector``: ``serve`` receives OTLP into SQLite; ``report`` writes the store's report to a file;
``alerts`` lists, acknowledges and silences a running collector's alerts (``_alert_cli.py``); ``users add`` puts a
person in a users file (``_users_cli.py``).

Configuration mistakes exit with status 2 and a message that names the fix (never a traceback). ``--help`` is
plain text (``DESCRIPTION``, not this docstring); ``serve`` prints the live page's URL once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from ragtrace import ConfigurationError
from ragtrace import environment_variables as env
from ragtrace_collector._alert_cli import add_alert_commands, run_alert_command
from ragtrace_collector._budget import DEFAULT_MAX_INFLIGHT_BYTES
from ragtrace_collector._config import STORE_VARIABLE
from ragtrace_collector._http import DEFAULT_MAX_BODY_BYTES
from ragtrace_collector._join import JoinLimits
from ragtrace_collector._phoenix import PHOENIX_API_KEY_VARIABLE, PHOENIX_URL_VARIABLE
from ragtrace_collector._server import Collector, CollectorConfig
from ragtrace_collector._store import DatabaseError, SchemaTooNew, StoreError, is_postgres, redacted_url
from ragtrace_collector._store.claims import LEASE_SECONDS
from ragtrace_collector._users_cli import add_users_commands, run_users_command
from ragtrace_collector._version import __version__

TOKEN_VARIABLE = env.RAGTRACE_COLLECTOR_TOKEN
"""Bearer token the receivers require when ``--token`` is not given."""
INGEST_TOKEN_VARIABLE = env.RAGTRACE_COLLECTOR_INGEST_TOKEN
ADMIN_TOKEN_VARIABLE = env.RAGTRACE_COLLECTOR_ADMIN_TOKEN
USERS_FILE_VARIABLE = env.RAGTRACE_COLLECTOR_USERS_FILE


DESCRIPTION = (
    "Receive OTLP traces from ragtrace apps into a SQLite file, score what the apps did not score, watch the "
    "scores and alert (serve); write the store's report (report); list, acknowledge and silence a running "
    "collector's alerts (alerts); add a person who signs in to the pages (users add)."
)
"""What ``--help`` says: plain text, as a terminal shows it (the module docstring is reStructuredText)."""


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser (``main`` parses with it; the documentation's tests check its commands)."""
    parser = argparse.ArgumentParser(prog="ragtrace-collector", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser(
        "serve",
        help="receive OTLP (HTTP and gRPC) and store spans and scores in SQLite",
        description="Receive OTLP (HTTP and gRPC) and store spans and scores in SQLite; print the live page's URL.",
    )
    serve.add_argument(
        "--db", type=Path, default=None, help="SQLite file (created when missing; its directory must exist)"
    )
    serve.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help=f"postgresql://USER@HOST:PORT/DB instead of --db, for several replicas (or {STORE_VARIABLE})",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=4318, help="OTLP/HTTP port (default 4318)")
    serve.add_argument("--grpc-port", type=int, default=4317, help="OTLP/gRPC port (default 4317; -1 turns it off)")
    serve.add_argument(
        "--token",
        default=None,
        help=(
            f"one bearer token for everything: senders, the pages and the API (or {TOKEN_VARIABLE}); it shows in "
            "ps: prefer --token-file"
        ),
    )
    serve.add_argument("--token-file", type=Path, default=None, help="--token, read from this file")
    serve.add_argument(
        "--ingest-token-file",
        type=Path,
        default=None,
        help=f"the senders' token alone (OTLP HTTP and gRPC), read from this file (or {INGEST_TOKEN_VARIABLE})",
    )
    serve.add_argument(
        "--admin-token-file",
        type=Path,
        default=None,
        help=(
            "the token of people and the API alone (sign-in, /api/..., /metrics), read from this file "
            f"(or {ADMIN_TOKEN_VARIABLE})"
        ),
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name the pages answer besides localhost and the bind address (repeatable; '*': any)",
    )
    serve.add_argument(
        "--trusted-user-header",
        default=None,
        metavar="HEADER",
        help=(
            "a header a trusted proxy sets to the signed-in person (e.g. X-Forwarded-User behind oauth2-proxy): it "
            "authenticates, and acks and silences record the name; only when the port is reachable through it alone"
        ),
    )
    serve.add_argument(
        "--users-file",
        type=Path,
        default=None,
        metavar="FILE",
        help=(
            "people who sign in to the pages by name and password (one NAME:HASH a line, written by `users add`); "
            f"acks, silences and reviews record the name; needs an admin token (or {USERS_FILE_VARIABLE})"
        ),
    )
    serve.add_argument(
        "--max-silence-days", type=float, default=30.0, help="longest silence the alert API accepts (default 30)"
    )
    serve.add_argument("--insecure", action="store_true", help="allow a non-loopback --host without a token")
    serve.add_argument("--rules", type=Path, default=None, help="alert rules TOML file (default: built-in rules)")
    serve.add_argument("--retention-days", type=float, default=None, help="delete rows older than this many days")
    serve.add_argument(
        "--claim-lease-seconds",
        type=float,
        default=LEASE_SECONDS,
        help=(
            "how long a replica's claim on a record to score or a trace to join holds; a replica that dies holding "
            f"work has it taken over by another after this (default {LEASE_SECONDS:.0f})"
        ),
    )
    serve.add_argument("--forward", default=None, help="forward spans and scores to this OTLP/HTTP endpoint")
    serve.add_argument(
        "--phoenix-url",
        default=None,
        help=(
            "post every stored score to Arize Phoenix at this base URL as a span annotation "
            f"(or {PHOENIX_URL_VARIABLE}; API key from {PHOENIX_API_KEY_VARIABLE})"
        ),
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help=f"largest request, after decompression (default {DEFAULT_MAX_BODY_BYTES}); larger gets 413",
    )
    serve.add_argument(
        "--max-inflight-bytes",
        type=int,
        default=DEFAULT_MAX_INFLIGHT_BYTES,
        help=(
            f"request bytes held at once, all requests together (default {DEFAULT_MAX_INFLIGHT_BYTES}); past it "
            "a request gets 429 with Retry-After (gRPC: RESOURCE_EXHAUSTED with a retry delay)"
        ),
    )
    serve.add_argument(
        "--score",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="score RAG spans that arrive unscored (default on; rate from RAGTRACE_SAMPLE_RATE)",
    )
    limits = JoinLimits()
    serve.add_argument(
        "--join",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="join and score RAG calls traced by OpenInference, OpenLLMetry or the GenAI conventions (default on)",
    )
    serve.add_argument(
        "--join-settle-seconds",
        type=float,
        default=limits.settle_seconds,
        help=(
            "join a trace once its root arrived and no span of it arrived for this many seconds "
            f"(default {limits.settle_seconds:g})"
        ),
    )
    serve.add_argument(
        "--join-max-seconds",
        type=float,
        default=limits.max_seconds,
        help=f"join a trace whose root never arrives this long after its first span (default {limits.max_seconds:g})",
    )
    serve.add_argument(
        "--join-max-traces",
        type=int,
        default=limits.max_traces,
        help=f"traces waiting to be joined at once; the oldest past it are dropped (default {limits.max_traces})",
    )
    serve.add_argument(
        "--join-max-bytes",
        type=int,
        default=limits.max_bytes,
        help=(
            "approximate bytes of the waiting traces' RAG spans; past it the oldest are dropped "
            f"(default {limits.max_bytes})"
        ),
    )
    cpus = os.cpu_count() or 1
    serve.add_argument(
        "--decode-processes",
        type=int,
        default=cpus if cpus > 1 else 0,
        help=f"processes that decode OTLP, 0 for threads (default one per CPU: {cpus if cpus > 1 else 0})",
    )
    serve.add_argument("--log-level", default="INFO", help="logging level (default INFO)")

    report = commands.add_parser(
        "report",
        help="write the store's report (HTML with charts, or markdown)",
        description="Write the store's report (HTML with charts, or markdown) to a file.",
    )
    report.add_argument("--db", type=Path, default=None, help="SQLite file written by serve")
    report.add_argument("--store", default=None, metavar="URL", help="postgresql://... URL serve writes to")
    report.add_argument("--out", type=Path, required=True, help="file to write")
    report.add_argument(
        "--format",
        choices=("html", "markdown"),
        default=None,
        help="default: markdown for a .md or .markdown --out, else html",
    )
    copy = commands.add_parser(
        "copy",
        help="copy every row of a SQLite store into a PostgreSQL one (moving to a fleet)",
        description=(
            "Copy every row of the SQLite file --db into the PostgreSQL database --store (created or migrated "
            "first). Rows whose key the target has are left as they are, so an interrupted copy is run again."
        ),
    )
    copy.add_argument("--db", type=Path, required=True, help="SQLite file written by serve (read only)")
    copy.add_argument("--store", required=True, metavar="URL", help="postgresql://USER@HOST:PORT/DB to copy into")
    add_alert_commands(commands)
    add_users_commands(commands)
    return parser


def serve_config(args: argparse.Namespace) -> CollectorConfig:
    """What ``serve`` runs with, from its parsed arguments and the variables (not validated yet: the
    collector validates it before anything starts)."""
    store = args.store or (None if args.db is not None else env.read_str(STORE_VARIABLE))
    return CollectorConfig(
        db=args.db,
        store=store,
        host=args.host,
        port=args.port,
        grpc_port=None if args.grpc_port < 0 else args.grpc_port,
        token=args.token or _token_file(args.token_file, "--token-file") or env.read_str(TOKEN_VARIABLE),
        ingest_token=_token_file(args.ingest_token_file, "--ingest-token-file") or env.read_str(INGEST_TOKEN_VARIABLE),
        admin_token=_token_file(args.admin_token_file, "--admin-token-file") or env.read_str(ADMIN_TOKEN_VARIABLE),
        allowed_hosts=tuple(args.allowed_host),
        trusted_user_header=args.trusted_user_header,
        users_file=args.users_file or _path(env.read_str(USERS_FILE_VARIABLE)),
        max_silence_days=args.max_silence_days,
        insecure=args.insecure,
        rules=args.rules,
        retention_days=args.retention_days,
        claim_lease_seconds=args.claim_lease_seconds,
        forward=args.forward,
        phoenix_url=args.phoenix_url or env.read_str(PHOENIX_URL_VARIABLE),
        phoenix_api_key=env.read_str(PHOENIX_API_KEY_VARIABLE),
        max_body_bytes=args.max_body_bytes,
        max_inflight_bytes=args.max_inflight_bytes,
        score=args.score,
        decode_processes=args.decode_processes,
        join=args.join,
        join_limits=JoinLimits(
            settle_seconds=args.join_settle_seconds,
            max_seconds=args.join_max_seconds,
            max_traces=args.join_max_traces,
            max_bytes=args.join_max_bytes,
        ),
    )


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _token_file(path: Path | None, flag: str) -> str | None:
    """The token in the file at ``path`` (its first line, stripped); None without a path."""
    if path is None:
        return None
    try:
        token = path.read_text(encoding="utf-8").strip().splitlines()[0:1]
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{flag} {path}: cannot read it ({type(exc).__name__})") from None
    if not token or not token[0].strip():
        raise ConfigurationError(f"{flag} {path}: the file is empty; put the token on its first line")
    return token[0].strip()


def _serve(args: argparse.Namespace) -> int:
    config = serve_config(args)
    collector = Collector(config)

    def announce() -> None:
        # On stdout whatever the --log-level: where to look is the first thing a new user needs.
        if collector.page_url is not None:
            hint = " (sign in with the admin token, or add ?token=<admin token> once)" if config.people_token else ""
            print(f"ragtrace collector: page at {collector.page_url}{hint}", flush=True)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, collector.request_stop)
        await collector.run(on_ready=announce)

    asyncio.run(main())
    return 0


def _report(args: argparse.Namespace) -> int:
    if (args.db is None) == (args.store is None):
        raise ConfigurationError("give the store to report on: --db FILE or --store postgresql://..., one of them")
    if args.store is not None and not is_postgres(args.store):
        raise ConfigurationError(f"--store {redacted_url(args.store)}: not a PostgreSQL URL; give postgresql://...")
    if args.db is not None and not args.db.is_file():
        raise ConfigurationError(f"--db {args.db}: no such file; give the SQLite file written by serve")
    try:
        from ragtrace_collector._report import write_report
    except ImportError as exc:
        print(f"ragtrace-collector: the report module is not available: {exc}", file=sys.stderr)
        return 1
    write_report(args.store or args.db, args.out, args.format)
    print(f"wrote {args.out}")
    return 0


def _copy(args: argparse.Namespace) -> int:
    if not args.db.is_file():
        raise ConfigurationError(f"--db {args.db}: no such file; give the SQLite file written by serve")
    if not is_postgres(args.store):
        raise ConfigurationError(f"--store {redacted_url(args.store)}: not a PostgreSQL URL; give postgresql://...")
    from ragtrace_collector._store.postgres import PostgresStore
    from ragtrace_collector._store.transfer import copy_store

    PostgresStore(args.store).close()  # reachable, and the user may create the tables: said in one line if not
    copied = copy_store(args.db, args.store)  # StoreError, in one line, when the engine stopped it
    for table, count in copied.read.items():
        print(f"{table}: {count} row(s) read, {copied.written[table]} new in {redacted_url(args.store)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        logging.basicConfig(
            level=getattr(logging, str(args.log_level).upper(), logging.INFO),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
    if args.command == "alerts":
        return run_alert_command(args)
    if args.command == "users":
        return run_users_command(args)
    try:
        if args.command == "copy":
            return _copy(args)
        return _serve(args) if args.command == "serve" else _report(args)
    except (ConfigurationError, SchemaTooNew) as exc:
        print(f"ragtrace-collector: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:  # a --store that could not be opened: unreachable, refused, without rights
        print(f"ragtrace-collector: --store {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"ragtrace-collector: {exc}", file=sys.stderr)
        return 1
    except DatabaseError as exc:
        # e.g. a --db that is a directory or not a SQLite file: one line, not a traceback.
        print(
            f"ragtrace-collector: --db {args.db}: {exc}; give a SQLite file written by serve (or, for serve, "
            "a new file name)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
