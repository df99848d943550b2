"""The running collector: the store, the OTLP/HTTP and OTLP/gRPC receivers, scoring, forwarding, the watcher.

``CollectorConfig`` (``_config.py``, re-exported here) holds what ``ragtrace-collector serve`` takes and checks it
(``validate`` raises ``ConfigurationError`` naming the fix). ``Collector(config).run()`` serves until stopped;
``Collector.start_in_thread()`` runs it on a background thread (tests, benchmarks, embedding).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.routing import BaseRoute

from ragtrace_collector._address import host_port, listen, page_url, probe
from ragtrace_collector._alerts import Watcher
from ragtrace_collector._budget import ByteBudget
from ragtrace_collector._config import CollectorConfig
from ragtrace_collector._decoded import DECODED_COST_FACTOR
from ragtrace_collector._forward import Forwarder
from ragtrace_collector._grpc import create_grpc_server
from ragtrace_collector._http import alert_api_routes, create_app, review_api_routes
from ragtrace_collector._http._auth import Access, default_hosts
from ragtrace_collector._http._connections import ConcurrencyLimit, guarded_protocol
from ragtrace_collector._http._users import read_users
from ragtrace_collector._join import Settler
from ragtrace_collector._memory import tune_allocator
from ragtrace_collector._phoenix import PhoenixAnnotator
from ragtrace_collector._pipeline import Pipeline
from ragtrace_collector._prometheus import Sources, metrics_routes
from ragtrace_collector._report import page_routes
from ragtrace_collector._stats import Stats
from ragtrace_collector._store import Storage, Store, open_store

__all__ = ["Collector", "CollectorConfig"]

_log = logging.getLogger("ragtrace_collector")

_NS_PER_DAY = 86_400 * 1_000_000_000
_PRUNE_EVERY_SECONDS = 3600.0
_MAX_REQUESTS = 256
_MAX_HEAD_BYTES = 16 * 1024
_WORKER_SLACK_BYTES = 64 * 1024 * 1024


class Collector:
    """One collector process's parts, wired together. See the module docstring."""

    def __init__(self, config: CollectorConfig) -> None:
        config.validate()
        self.config = config
        self.http_port: int | None = None
        self.grpc_port: int | None = None
        self.page_url: str | None = None
        """The live page's URL once it is served (None when it is not)."""
        self.store: Storage | None = None
        self.pipeline: Pipeline | None = None
        self.scorer: Any = None
        self.forwarder: Forwarder | None = None
        self.annotator: PhoenixAnnotator | None = None
        """Posts the stored scores to Phoenix as span annotations once started; None without ``phoenix_url``."""
        self.watcher: Any = None
        self.settler: Settler | None = None
        """Joins the RAG calls other instrumentations traced (``_join.Settler``) once started; None when
        ``join`` is off. Tests drive it with ``settle_once(now_ns)``."""
        """The alert watcher (``_alerts.Watcher``) once started; None when ``watch`` is off."""
        self.budget = ByteBudget(config.max_inflight_bytes)
        """The in-flight byte budget both receivers hold request bytes against."""
        self.stats = Stats()
        """What the receivers, the pipeline and scoring counted (``/metrics``)."""
        self._uvicorn: uvicorn.Server | None = None
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._stop_requested = False

    async def run(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve until ``stop()`` (or SIGINT/SIGTERM when run by the command).

        ``on_ready`` is called once both receivers listen (``http_port``, ``grpc_port`` and ``page_url`` are set).
        Every part is stopped in the reverse order of its start, also when the start-up fails half-way: the
        receivers first, then the watcher, scoring (which still writes), forwarding (which still sends what
        scoring produced), the pipeline, the Phoenix annotator (which posts what they all stored), and the store
        last.
        """
        config = self.config
        loop = asyncio.get_running_loop()
        tune_allocator()  # request buffers given back to the system once freed (_memory)
        async with contextlib.AsyncExitStack() as stack:
            watcher = None
            if config.watch:
                # Built first: a bad rules file stops the start-up before anything listens.
                watcher = self.watcher = Watcher(config.target, config.rules)
            # Bound before the store exists, so a busy port stops the start-up without leaving a new, empty --db
            # behind; connections queue in the backlog until uvicorn accepts them below.
            sock = listen(config.host, config.port)
            stack.callback(sock.close)  # for a start-up that fails before uvicorn serves (which closes it too)
            if config.grpc_port is not None:
                probe(config.host, config.grpc_port)  # the gRPC port too, before the store exists
            # Writers in several processes (the decode processes) take turns through one lock.
            # (SQLite's; PostgreSQL locks rows, and its writers need no turns.)
            store: Storage
            if config.store is not None:
                store = self.store = open_store(config.store)
            else:
                assert config.db is not None
                write_lock = multiprocessing.get_context("spawn").Lock() if config.decode_processes else None
                store = self.store = Store(config.db, write_lock=write_lock)
            stack.callback(store.close)
            if config.phoenix_url:
                # Started before, so stopped after, everything that writes scores: its last read sees them all.
                annotator = self.annotator = PhoenixAnnotator(
                    config.phoenix_url, config.target, api_key=config.phoenix_api_key
                )
                annotator.start()
                stack.push_async_callback(annotator.stop)
            forwarder: Forwarder | None = None
            if config.forward:
                forwarder = self.forwarder = Forwarder(config.forward)
                forwarder.start()
                stack.push_async_callback(forwarder.stop)
            scorer = None
            if config.score:
                from ragtrace_collector._scoring import ServerScorer

                forward_carrier = None
                if forwarder is not None:
                    fw = forwarder

                    def forward_carrier(payload: bytes) -> None:
                        loop.call_soon_threadsafe(fw.submit, payload)

                scorer = self.scorer = ServerScorer(
                    store, forward=forward_carrier, stats=self.stats, lease_seconds=config.claim_lease_seconds
                )
                scorer.start()
                stack.push_async_callback(asyncio.to_thread, scorer.stop)
            if config.join:
                # Started after scoring and so stopped before it: it hands scoring what it joins.
                settler = self.settler = Settler(
                    store,
                    config.join_limits,
                    scorer=scorer,
                    stats=self.stats,
                    lease_seconds=config.claim_lease_seconds,
                )
                settler.start()
                stack.push_async_callback(asyncio.to_thread, settler.stop)
            pipeline = self.pipeline = Pipeline(
                store,
                scorer=scorer,
                forwarder=forwarder,
                decode_processes=config.decode_processes,
                stats=self.stats,
                # A safety net under the decoded-size estimate (_decoded): the body as received, what it may
                # decode to, and room for the allocator's slack.
                worker_memory_bytes=(DECODED_COST_FACTOR + 1) * config.max_body_bytes + _WORKER_SLACK_BYTES,
            )
            stack.push_async_callback(asyncio.to_thread, pipeline.close)
            await pipeline.warm_up()
            routes: list[BaseRoute] = metrics_routes(self._metric_sources(scorer, forwarder, watcher))
            if config.watch or config.page:
                # Acknowledge and silence from the page and the CLI; a silence naming no rule the watcher runs is
                # refused as a typo.
                names = [rule.name for rule in watcher.rules.rules] if watcher is not None else None
                routes.extend(
                    alert_api_routes(store, rule_names=names, max_silence_ns=int(config.max_silence_days * 86_400e9))
                )
            page_served = False
            not_found = None
            if config.page:
                from ragtrace_collector._triage._routes import not_found_handler

                not_found = not_found_handler
                routes.extend(page_routes(store))
                # People's reviews of records: the record page's buttons, the labels export, the agreement.
                routes.extend(review_api_routes(store))
                page_served = True
            app = create_app(
                pipeline,
                ingest_token=config.sender_token,
                access=Access(
                    admin_token=config.people_token,
                    allowed_hosts=default_hosts(config.host, config.allowed_hosts),
                    user_header=config.trusted_user_header,
                    users=read_users(config.users_file) if config.users_file is not None else None,
                ),
                max_body_bytes=config.max_body_bytes,
                budget=self.budget,
                extra_routes=routes,
                stats=self.stats,
                not_found=not_found,
            )
            if watcher is not None:
                watcher.start()
                stack.push_async_callback(asyncio.to_thread, watcher.stop)
            if config.retention_days:
                pruner = loop.create_task(self._prune_forever(store))
                stack.callback(pruner.cancel)
            if config.grpc_port is not None:
                grpc_server, self.grpc_port = create_grpc_server(
                    pipeline,
                    host_port(config.host, config.grpc_port),
                    token=config.sender_token,
                    max_message_bytes=config.max_body_bytes,
                    budget=self.budget,
                    stats=self.stats,
                )
                await grpc_server.start()
                stack.push_async_callback(grpc_server.stop, 5)
            # Past this many requests in flight the app answers 503 (retryable in OTLP), /healthz excepted.
            limited = ConcurrencyLimit(app, limit=_MAX_REQUESTS)
            server = self._uvicorn = uvicorn.Server(
                uvicorn.Config(
                    limited,
                    host=config.host,
                    port=config.port,
                    log_level="warning",
                    access_log=False,
                    lifespan="off",
                    timeout_graceful_shutdown=10,
                    # A connection must send each request's head in time, and one client's connections are
                    # limited (_http._connections); uvicorn's own limit counted idle connections too.
                    http=guarded_protocol(),
                    limit_concurrency=None,
                    h11_max_incomplete_event_size=_MAX_HEAD_BYTES,
                )
            )
            if self._stop_requested:
                server.should_exit = True
            self.http_port = sock.getsockname()[1]
            if page_served:
                self.page_url = page_url(config.host, self.http_port)
            serving = loop.create_task(server.serve(sockets=[sock]))
            self._ready.set()
            _log.info(
                "ragtrace-collector: OTLP/HTTP on %s, OTLP/gRPC %s, store %s",
                host_port(config.host, self.http_port),
                f"on {host_port(config.host, self.grpc_port)}" if self.grpc_port is not None else "off",
                config.store_name,
            )
            if on_ready is not None:
                on_ready()
            await serving

    def _phoenix_counts(self) -> tuple[int, int, dict[str, int]]:
        """The annotator's counts for ``/metrics`` (zeros until it has started)."""
        annotator = self.annotator
        if annotator is None:
            return 0, 0, {}
        return annotator.sent, annotator.pending, dict(annotator.dropped_by)

    def _metric_sources(self, scorer: Any, forwarder: Forwarder | None, watcher: Any) -> Sources:
        """What ``/metrics`` reads: the counters, the budget, the queues of the parts that run, the alert groups."""
        settler = self.settler
        return Sources(
            stats=self.stats,
            db_path=self.config.target,
            inflight_bytes=lambda: self.budget.in_flight,
            inflight_limit_bytes=self.budget.limit,
            scoring_queue=(lambda: scorer.pending) if scorer is not None else None,
            forward_queue=(lambda: forwarder.pending) if forwarder is not None else None,
            forward_dropped=(lambda: forwarder.dropped) if forwarder is not None else None,
            join_waiting=settler.waiting if settler is not None else None,
            join_dropped=(lambda: settler.stats.dropped) if settler is not None else None,
            phoenix=self._phoenix_counts if self.config.phoenix_url else None,
            watching=watcher is not None,
            leading=(lambda: bool(watcher.leadership.leading)) if watcher is not None else None,
            alert_groups_untracked=(lambda: dict(watcher.untracked_groups)) if watcher is not None else None,
        )

    async def _prune_forever(self, store: Storage) -> None:
        assert self.config.retention_days is not None
        keep_ns = int(self.config.retention_days * _NS_PER_DAY)
        while True:
            try:
                deleted = await asyncio.to_thread(store.prune, time.time_ns() - keep_ns)
                if any(deleted.values()):
                    _log.info("retention: deleted %s", deleted)
            except Exception:
                _log.warning("retention prune failed", exc_info=True)
            await asyncio.sleep(_PRUNE_EVERY_SECONDS)

    def request_stop(self) -> None:
        """Ask the servers to finish the requests in flight and stop (thread-safe)."""
        self._stop_requested = True
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True

    # -- running on a background thread ----------------------------------------------------------

    def start_in_thread(self, timeout: float = 30.0) -> Collector:
        """Run on a daemon thread; return once both receivers listen (ports in ``http_port``/``grpc_port``)."""

        def main() -> None:
            try:
                asyncio.run(self.run())
            except BaseException as exc:
                self._error = exc
            finally:
                self._stopped.set()
                self._ready.set()

        self._thread = threading.Thread(target=main, name="ragtrace-collector", daemon=True)
        self._thread.start()
        self._ready.wait(timeout)
        if self._error is not None:
            raise self._error
        if self.http_port is None:
            self.stop()
            raise TimeoutError("the collector did not start in time")
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop a collector started with ``start_in_thread`` and wait for it."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> Collector:
        return self.start_in_thread()

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()
