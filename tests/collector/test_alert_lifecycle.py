"""One group's alert, step by step (``_alerts._lifecycle``): holds, NO_DATA, the frozen baseline, silences, acks."""

from __future__ import annotations

from ragtrace_collector._alerts import Mute, Policy, Track, Transition, frozen_baseline_end, step

S = 1_000_000_000
MINUTE = 60 * S
POLICY = Policy(renotify_ns=60 * MINUTE, keep_firing_for_ns=15 * MINUTE, no_data_after_ns=10 * MINUTE)
OFF = Policy(renotify_ns=60 * MINUTE, keep_firing_for_ns=0, no_data_after_ns=0)


def run(policy: Policy, said: list[tuple[int, str]], *, mute: Mute | None = None) -> tuple[Track, list[Transition]]:
    """Feed (time, detected state) pairs; return the last track and the steps that recorded a row."""
    track: Track | None = None
    recorded = []
    for at, detected in said:
        stepped = step(track, detected, at, policy, baseline_end_ns=at - 10 * S, mute=mute)  # type: ignore[arg-type]
        track = stepped.track
        if stepped.record:
            recorded.append(stepped)
    assert track is not None
    return track, recorded


def changes(steps: list[Transition]) -> list[tuple[str | None, str, bool]]:
    return [(s.previous, s.track.state, s.notify) for s in steps]


def test_thin_windows_and_dips_inside_a_spike_are_one_alert() -> None:
    said = [(0, "OK"), (60 * S, "ALERT"), (120 * S, "NO_DATA"), (180 * S, "WARNING"), (240 * S, "OK"),
            (300 * S, "NO_DATA"), (360 * S, "ALERT"), (420 * S, "ALERT")]  # fmt: skip
    _, held = run(POLICY, said)
    assert changes(held) == [(None, "OK", False), ("OK", "ALERT", True)]
    # Without the hold (both timings 0) the same evaluations are the flapping of issue 16.
    _, flapping = run(OFF, said)
    assert [s for _, s, _ in changes(flapping)] == ["OK", "ALERT", "NO_DATA", "WARNING", "OK", "NO_DATA", "ALERT"]


def test_an_alert_resolves_once_its_detector_was_clear_for_keep_firing_for() -> None:
    track, recorded = run(POLICY, [(0, "OK"), (MINUTE, "ALERT"), (2 * MINUTE, "OK"), (15 * MINUTE, "OK")])
    assert track.state == "ALERT"
    track, recorded = run(POLICY, [(0, "OK"), (MINUTE, "ALERT"), (2 * MINUTE, "OK"), (16 * MINUTE, "OK")])
    assert changes(recorded)[-1] == ("ALERT", "OK", True)
    # A WARNING after the hold is where it lands: the detector's own state.
    track, _ = run(POLICY, [(0, "OK"), (MINUTE, "ALERT"), (16 * MINUTE, "WARNING")])
    assert track.state == "WARNING"


def test_no_data_that_lasts_ends_a_measured_state_and_the_alert() -> None:
    track, recorded = run(POLICY, [(0, "OK"), (MINUTE, "NO_DATA"), (9 * MINUTE, "NO_DATA")])
    assert track.state == "OK" and len(recorded) == 1
    track, recorded = run(POLICY, [(0, "OK"), (MINUTE, "NO_DATA"), (10 * MINUTE, "NO_DATA")])
    assert changes(recorded)[-1] == ("OK", "NO_DATA", True)
    # A firing alert that stops receiving records is held for keep_firing_for, then says NO_DATA (not OK).
    track, recorded = run(POLICY, [(0, "ALERT"), (5 * MINUTE, "NO_DATA"), (14 * MINUTE, "NO_DATA")])
    assert track.state == "ALERT"
    track, recorded = run(POLICY, [(0, "ALERT"), (5 * MINUTE, "NO_DATA"), (16 * MINUTE, "NO_DATA")])
    assert changes(recorded) == [(None, "ALERT", True), ("ALERT", "NO_DATA", True)]
    # A new group without data is recorded quietly; one first seen unmeasured has nothing to hold.
    track, recorded = run(POLICY, [(0, "NO_DATA"), (MINUTE, "OK")])
    assert changes(recorded) == [(None, "NO_DATA", False), ("NO_DATA", "OK", True)]


def test_the_baseline_freezes_when_an_alert_starts_and_slides_again_after() -> None:
    first = step(None, "OK", 0, POLICY, baseline_end_ns=-10 * S)
    assert first.track.baseline_end_ns is None and frozen_baseline_end(first.track) is None
    fired = step(first.track, "ALERT", 100 * S, POLICY, baseline_end_ns=90 * S)
    assert frozen_baseline_end(fired.track) == 90 * S
    later = step(fired.track, "ALERT", 900 * S, POLICY, baseline_end_ns=frozen_baseline_end(fired.track))
    assert frozen_baseline_end(later.track) == 90 * S
    resolved = step(later.track, "OK", 900 * S + 16 * MINUTE, POLICY, baseline_end_ns=90 * S)
    assert resolved.track.state == "OK" and frozen_baseline_end(resolved.track) is None


def test_renotify_counts_from_the_last_row() -> None:
    _, recorded = run(POLICY, [(0, "ALERT"), (59 * MINUTE, "ALERT"), (60 * MINUTE, "ALERT"), (61 * MINUTE, "ALERT")])
    assert changes(recorded) == [(None, "ALERT", True), ("ALERT", "ALERT", True)]


def test_a_silence_records_every_change_and_sends_none_then_the_alert_if_it_still_fires() -> None:
    silenced = Mute(silenced=True)
    track = step(None, "OK", 0, POLICY).track
    fired = step(track, "ALERT", MINUTE, POLICY, mute=silenced)
    assert (fired.record, fired.notify, fired.track.announced) == (True, False, False)
    quiet = step(fired.track, "ALERT", 2 * MINUTE, POLICY, mute=silenced)
    assert not quiet.record
    # The silence is over and it still fires: sent now, as a reminder of an alert nobody heard of.
    late = step(quiet.track, "ALERT", 3 * MINUTE, POLICY)
    assert (late.record, late.notify, late.previous, late.track.announced) == (True, True, "ALERT", True)
    assert not step(late.track, "ALERT", 4 * MINUTE, POLICY).record
    # Acknowledged meanwhile: nothing late, no reminders; the resolution is sent.
    acked = Mute(acknowledged=True)
    assert not step(quiet.track, "ALERT", 3 * MINUTE, POLICY, mute=acked).record
    assert not step(late.track, "ALERT", 3 * 60 * MINUTE, POLICY, mute=acked).record
    resolved = step(late.track, "OK", 3 * 60 * MINUTE, POLICY, mute=acked)
    assert (resolved.previous, resolved.track.state, resolved.notify) == ("ALERT", "OK", True)


def test_a_warning_hovering_at_its_level_is_one_warning_and_an_alert_steps_down_through_it() -> None:
    said = [(0, "OK"), (MINUTE, "WARNING"), (2 * MINUTE, "OK"), (3 * MINUTE, "WARNING"), (4 * MINUTE, "OK"),
            (18 * MINUTE, "OK"), (19 * MINUTE, "OK")]  # fmt: skip
    _, recorded = run(POLICY, said)
    assert changes(recorded) == [(None, "OK", False), ("OK", "WARNING", True), ("WARNING", "OK", True)]
    assert recorded[-1].track.since_ns == 18 * MINUTE
    said = [(0, "ALERT"), (MINUTE, "WARNING"), (10 * MINUTE, "WARNING"), (17 * MINUTE, "OK"), (26 * MINUTE, "OK")]
    _, recorded = run(POLICY, said)
    assert changes(recorded) == [(None, "ALERT", True), ("ALERT", "WARNING", True), ("WARNING", "OK", True)]
