"""Fork safety: the child starts its own worker; records queued in the parent are not lost in the parent."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import warnings

import pytest

from ragtrace import semconv
from tests.ragtrace.test_processor import Scripted, decision, make_rig

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def test_fork_child_scores_its_own_spans_and_parent_keeps_its_queue() -> None:
    gate = threading.Event()
    rig = make_rig(metrics=[Scripted(gate=gate)], queue_size=100, max_concurrency=2)
    parent_ids = [rig.rag() for _ in range(5)]
    assert rig.processor.pending == 5
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
        pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        code = 1
        signal.alarm(20)  # a deadlocked child dies instead of hanging the test run
        try:
            os.close(read_fd)
            before = len(rig.downstream.spans)
            gate.set()  # the child's copy of the gate; the parent's stays closed
            child_ids = [rig.rag() for _ in range(3)]
            flushed = rig.processor.force_flush(10_000)
            mine = rig.downstream.spans[before:]
            report = {
                "flushed": flushed,
                "child_ids": child_ids,
                "exported": [s.context.span_id for s in mine],
                "decisions": [decision(s) for s in mine],
                "pending": rig.processor.pending,
            }
            os.write(write_fd, json.dumps(report).encode())
            code = 0
        finally:
            sys.stdout.flush()
            os._exit(code)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    report = json.loads(b"".join(chunks))
    assert report["flushed"] is True
    assert sorted(report["exported"]) == sorted(report["child_ids"])  # only its own, each once
    assert set(report["decisions"]) == {semconv.DECISION_EVALUATED}
    assert report["pending"] == 0
    # The parent's queued records are still there and get scored in the parent.
    assert rig.processor.pending == 5
    gate.set()
    assert rig.processor.force_flush(10_000)
    spans = rig.downstream.by_id()
    assert set(spans) == set(parent_ids)
    assert {decision(s) for s in spans.values()} == {semconv.DECISION_EVALUATED}
    rig.provider.shutdown()


def test_a_sampler_lock_held_at_fork_time_does_not_deadlock_the_child() -> None:
    from ragtrace._sampling import Sampler
    from tests.ragtrace.test_sampling import span

    sampler = Sampler(1.0, throttle_per_minute=10)
    sampler._lock.acquire()  # as if another thread were inside decide() when the app forks
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            code = 1
            signal.alarm(10)  # a deadlocked child dies instead of hanging the test run
            try:
                code = 0 if sampler.decide(1, span()).selected else 2
            finally:
                os._exit(code)
    finally:
        sampler._lock.release()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_capture_locks_held_at_fork_time_do_not_deadlock_the_child() -> None:
    from ragtrace import _capture
    from ragtrace._capture import _capture_settings, _tracer
    from ragtrace._record import RagRecord

    store = _capture.RECORDS
    store.acquire()
    held = [store._lock, _capture_settings._settings_lock, _tracer._tracer_lock]
    for lock in held:
        lock.acquire()  # as if other threads were inside the store and the settings when the app forks
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            code = 1
            signal.alarm(10)  # a deadlocked child dies instead of hanging the test run
            try:
                store.put(1, 2, RagRecord.of("q"))
                _capture.set_settings(None)
                _capture.set_tracer_provider(None)
                code = 0 if store.take(1, 2) is not None else 2
            finally:
                os._exit(code)
    finally:
        for lock in held:
            lock.release()
        store.release()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
