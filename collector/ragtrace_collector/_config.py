"""What ``ragtrace-collector serve`` takes, as one frozen value: ``CollectorConfig``, and its checks.

``validate`` raises ``ConfigurationError`` naming the fix when the configuration is unsafe or wrong; the
collector calls it before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ragtrace import ConfigurationError
from ragtrace_collector._address import is_loopback
from ragtrace_collector._budget import DEFAULT_MAX_INFLIGHT_BYTES
from ragtrace_collector._forward import traces_url
from ragtrace_collector._http._body import DEFAULT_MAX_BODY_BYTES
from ragtrace_collector._http._users import read_users
from ragtrace_collector._join import JoinLimits
from ragtrace_collector._phoenix import annotations_url
from ragtrace_collector._store import is_postgres, redacted_url
from ragtrace_collector._store.claims import LEASE_SECONDS

__all__ = ["STORE_VARIABLE", "CollectorConfig"]

STORE_VARIABLE = "RAGTRACE_COLLECTOR_STORE"
"""The variable ``serve --store`` reads its URL from when the flag is not given."""

_MAX_RETENTION_DAYS = 100_000  # about 270 years: in nanoseconds, still a signed 64-bit integer
_MIN_LEASE_SECONDS = 2.0  # a claim renewed when scoring starts must outlast the round trip that renews it
_MAX_LEASE_SECONDS = 86_400.0  # a day: past it, a dead replica's work waits longer than anyone would


@dataclass(frozen=True, slots=True)
class CollectorConfig:
    """What the collector serves and how. Ports 0 pick free ports; ``grpc_port=None`` turns gRPC off.

    The store is ``db`` (a SQLite file, the embedded default) or ``store`` (a ``postgresql://`` URL, for a
    fleet); exactly one of them."""

    db: Path | None = None
    host: str = "127.0.0.1"
    port: int = 4318
    grpc_port: int | None = 4317
    token: str | None = field(default=None, repr=False)
    """One token doing everything (``--token``): sending, and the pages and the API, unless the two below say
    otherwise."""
    insecure: bool = False
    rules: Path | None = None
    retention_days: float | None = None
    forward: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES
    """Request bytes held at once by both receivers together (``_budget.ByteBudget``); past it, a retryable
    refusal."""
    score: bool = True
    decode_processes: int = 0
    """Processes that decode OTLP (0: threads of this process). The command defaults to one per CPU."""
    watch: bool = True
    """Start the alert watcher (``_alerts.Watcher``) when that module is installed."""
    page: bool = True
    """Serve the live page (``_report.page_routes``) when that module is installed."""
    join: bool = True
    """Join and score the RAG calls other instrumentations traced (``_join``) once their traces settle."""
    join_limits: JoinLimits = field(default_factory=JoinLimits)
    """The settle window and the bounds on the traces waiting to be joined."""
    claim_lease_seconds: float = LEASE_SECONDS
    """How long a replica's claim on a record to score or a trace to join holds (``_store.claims``): after it, a
    replica that died holding the work has it taken over by another. It must outlast one record's scoring."""
    phoenix_url: str | None = None
    """Arize Phoenix's base URL: post every stored score there as a span annotation (``_phoenix``); None: off."""
    phoenix_api_key: str | None = field(default=None, repr=False)
    """Phoenix's API key (``Authorization: Bearer``), when its authentication is on."""
    store: str | None = field(default=None, repr=False)
    """A ``postgresql://USER@HOST:PORT/DB`` URL: the store is that database instead of a SQLite file."""
    ingest_token: str | None = field(default=None, repr=False)
    """The senders' token (OTLP HTTP and gRPC); None: ``token``."""
    admin_token: str | None = field(default=None, repr=False)
    """People's and the API's token (the pages, ``/api/...``, ``/metrics``); None: ``token``."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names the pages answer besides loopback's and the bind address (``--allowed-host``; ``*``: any)."""
    trusted_user_header: str | None = None
    """A header a trusted proxy sets to the signed-in person's name (``X-Forwarded-User``); None: ignored."""
    max_silence_days: float = 30.0
    """The longest silence the alert API accepts."""
    users_file: Path | None = None
    """The people who sign in to the pages by name and password (``_http._users``); None: the admin token signs in."""

    @property
    def sender_token(self) -> str | None:
        """The token the receivers require."""
        return self.ingest_token if self.ingest_token is not None else self.token

    @property
    def people_token(self) -> str | None:
        """The token the pages, the API and ``/metrics`` require."""
        return self.admin_token if self.admin_token is not None else self.token

    @property
    def target(self) -> str | Path:
        """The store the collector opens: the PostgreSQL URL, else the SQLite file."""
        if self.store is not None:
            return self.store
        assert self.db is not None, "validate() first"
        return self.db

    @property
    def store_name(self) -> str:
        """The store as logs and messages may show it (a URL without its password)."""
        if self.store is not None:
            return redacted_url(self.store)
        return str(self.db)

    def validate(self) -> None:
        """Raise ``ConfigurationError`` naming the fix when the configuration is unsafe or wrong."""
        _check_store(self)
        if not is_loopback(self.host) and not self.insecure:
            missing = [
                what
                for what, token in (("senders", self.sender_token), ("the pages and the API", self.people_token))
                if not token
            ]
            if missing:
                raise ConfigurationError(
                    f"--host {self.host} is not a loopback address and no token is set for {' and '.join(missing)}: "
                    "anyone who can reach it could write to the store or read it. Set --token-file (or "
                    "--ingest-token-file and --admin-token-file, or RAGTRACE_COLLECTOR_TOKEN), or pass --insecure "
                    "to accept that."
                )
        if self.users_file is not None:
            if not self.people_token:
                raise ConfigurationError(
                    "--users-file needs an admin token (--admin-token-file, --token-file or "
                    "RAGTRACE_COLLECTOR_ADMIN_TOKEN): the sign-in's sessions are signed with a key derived from it, "
                    "and without one the pages would be open to anyone anyway"
                )
            read_users(self.users_file)  # a wrong line stops the start, naming it
        if not 0 < self.max_silence_days <= 366:
            raise ConfigurationError(f"--max-silence-days {self.max_silence_days} must be more than 0, at most 366")
        for name, port in (("--port", self.port), ("--grpc-port", self.grpc_port)):
            if port is not None and not 0 <= port <= 65535:
                raise ConfigurationError(f"{name} {port} is not a TCP port: give a number from 1 to 65535")
        if self.decode_processes < 0:
            raise ConfigurationError(f"--decode-processes {self.decode_processes} must be 0 (threads) or more")
        if self.max_body_bytes < 1024:
            raise ConfigurationError(f"--max-body-bytes {self.max_body_bytes} is too small: give at least 1024")
        if self.max_inflight_bytes < self.max_body_bytes:
            raise ConfigurationError(
                f"--max-inflight-bytes {self.max_inflight_bytes} is below --max-body-bytes {self.max_body_bytes}: "
                f"the budget of all requests in flight must hold at least one request; give at least "
                f"{self.max_body_bytes}"
            )
        if self.retention_days is not None and not 0 < self.retention_days <= _MAX_RETENTION_DAYS:
            # "not 0 < x <= max" also refuses nan; inf and beyond-max days are no time SQLite can compare.
            raise ConfigurationError(
                f"--retention-days {self.retention_days} must be a positive number of days up to "
                f"{_MAX_RETENTION_DAYS}, e.g. 30 (leave it out to keep everything)"
            )
        self.join_limits.validate()
        if not _MIN_LEASE_SECONDS <= self.claim_lease_seconds <= _MAX_LEASE_SECONDS:  # refuses nan too
            raise ConfigurationError(
                f"--claim-lease-seconds {self.claim_lease_seconds} must be between {_MIN_LEASE_SECONDS:.0f} and "
                f"{_MAX_LEASE_SECONDS:.0f} seconds (default {LEASE_SECONDS:.0f}): long enough for one record's "
                "scoring, short enough that a dead replica's work is taken over"
            )
        if self.rules is not None and not self.rules.is_file():
            raise ConfigurationError(f"--rules {self.rules}: no such file; give the path of a rules TOML file")
        if self.forward is not None:
            traces_url(self.forward)
        if self.phoenix_url is not None:
            annotations_url(self.phoenix_url)


def _check_store(config: CollectorConfig) -> None:
    """One store, and one the collector can open."""
    if (config.db is None) == (config.store is None):
        raise ConfigurationError(
            "give the store: --db FILE (a SQLite file, one machine) or --store postgresql://USER@HOST:PORT/DB "
            f"(several replicas; or {STORE_VARIABLE}), not both"
        )
    if config.store is not None:
        if not is_postgres(config.store):
            raise ConfigurationError(
                f"--store {redacted_url(config.store)}: not a PostgreSQL URL; give postgresql://USER@HOST:PORT/DB, "
                "or --db FILE for a SQLite file"
            )
        return
    assert config.db is not None
    _check_db_directory(config.db)


def _check_db_directory(db: Path) -> None:
    """The ``--db`` file's directory must exist: a mistyped path would otherwise create a tree of directories
    and a new, empty store there, and the apps' spans would go where nobody looks. The file itself may be new."""
    directory = db.parent
    if directory.is_dir():
        return
    # The part of the path that is a file (``afile`` of ``afile/sub/x.db``) is what the user has to change.
    file = next((part for part in (*reversed(directory.parents), directory) if part.is_file()), None)
    if file is not None:
        raise ConfigurationError(f"--db {db}: {file} is a file, not a directory; give a --db path inside a directory")
    raise ConfigurationError(
        f"--db {db}: the directory {directory} does not exist; create it first (mkdir -p {directory}) "
        "or give a --db path in an existing directory"
    )
