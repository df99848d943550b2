"""The life of one group's alert, as a pure function: what the detector said, the group's track, the clock in,
the new track and whether to record and notify out. No I/O: the watcher and ``bench/drift_detection.py`` run the
same steps.

What makes a sustained spike one alert rather than a string of them:

* ``keep_firing_for``: an ALERT stays ALERT until the detector has not said ALERT for this long, so a spike
  whose statistic dips for an evaluation or two is still the same alert (hysteresis in time, on top of the
  detectors' own hysteresis in level); a WARNING likewise stays until the detector has said neither WARNING
  nor ALERT for this long, so a statistic hovering at the warning level is one warning, not one per dip;
* ``no_data_after``: a measured state (OK, WARNING, ALERT) turns into NO_DATA only once the detector has said
  NO_DATA for this long. A window left thin by a late export is a gap in what arrived, not news: it neither
  ends a firing alert nor sends anything;
* the baseline freezes when an ALERT starts: ``baseline_end_ns`` keeps the end of the baseline window the
  alert was raised against, and every evaluation of the group while it fires learns from that same window,
  so a long spike never becomes the baseline it is measured against.

Silences and acknowledgements (``Mute``) change what is sent, never the state: a silenced change is recorded
and not sent; an ALERT whose entry was silenced is sent when the silence ends if it still fires, unless it was
acknowledged; an acknowledged ALERT sends no reminders (its resolution is still sent).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ragtrace_collector import _drift
from ragtrace_collector._drift import State

__all__ = ["Mute", "Policy", "Track", "Transition", "frozen_baseline_end", "step"]


@dataclass(frozen=True, slots=True)
class Policy:
    """A rule's timings, in nanoseconds (``AlertRule.renotify_ns``, ``keep_firing_for_ns``, ``no_data_after_ns``)."""

    renotify_ns: int
    keep_firing_for_ns: int
    no_data_after_ns: int


@dataclass(frozen=True, slots=True)
class Mute:
    """Whether the group is silenced now, and whether its current ALERT was acknowledged."""

    silenced: bool = False
    acknowledged: bool = False


_UNMUTED = Mute()
_BAD = (_drift.WARNING, _drift.ALERT)


@dataclass(frozen=True, slots=True)
class Track:
    """One group's alert state between evaluations.

    ``since_ns``: when it entered ``state`` (for an ALERT, the start of the episode an acknowledgement names);
    ``notified_ns``: its last row (entry or reminder), from which ``renotify`` counts; ``last_alert_ns``,
    ``last_warning_ns`` and ``last_measured_ns``: the last evaluations that said ALERT, that said WARNING or
    ALERT, and that said anything but NO_DATA;
    ``baseline_end_ns``: the frozen end of the baseline window while ALERT; ``announced``: whether the
    current state was sent (False when a silence kept it back).
    """

    state: State
    since_ns: int
    notified_ns: int
    last_alert_ns: int | None = None
    last_measured_ns: int | None = None
    baseline_end_ns: int | None = None
    announced: bool = True
    last_warning_ns: int | None = None


@dataclass(frozen=True, slots=True)
class Transition:
    """The outcome of one evaluation: the new track; ``record`` when a row goes into ``alerts`` (a change or a
    reminder), with ``previous`` the state before; ``notify`` when that row is sent; ``held`` when the state
    is not the detector's own (kept by ``keep_firing_for`` or ``no_data_after``)."""

    track: Track
    record: bool = False
    previous: State | None = None
    notify: bool = False
    held: bool = False


def frozen_baseline_end(track: Track | None) -> int | None:
    """The baseline window's end to evaluate the group against: frozen while it fires, else None (sliding)."""
    if track is not None and track.state == _drift.ALERT:
        return track.baseline_end_ns
    return None


def _held_state(track: Track, detected: State, now: int, policy: Policy) -> State:
    """The state the group keeps although the detector said ``detected``, or ``detected`` itself."""
    state = detected
    # A gap in the data is not a change until it has lasted no_data_after.
    measured_lately = track.last_measured_ns is not None and now - track.last_measured_ns < policy.no_data_after_ns
    if detected == _drift.NO_DATA and track.state != _drift.NO_DATA and measured_lately:
        state = track.state
    # A firing alert ends only once its detector has stopped saying ALERT for keep_firing_for; a warning
    # (or an alert that ended while its detector still warned lately) once it has stopped saying either.
    alerted_lately = track.last_alert_ns is not None and now - track.last_alert_ns < policy.keep_firing_for_ns
    warned_lately = track.last_warning_ns is not None and now - track.last_warning_ns < policy.keep_firing_for_ns
    if state != _drift.ALERT and track.state == _drift.ALERT and alerted_lately:
        state = _drift.ALERT
    elif state in (_drift.OK, _drift.NO_DATA) and track.state in _BAD and warned_lately:
        state = _drift.WARNING
    return state


def step(
    track: Track | None,
    detected: State,
    now: int,
    policy: Policy,
    *,
    baseline_end_ns: int | None = None,
    mute: Mute | None = None,
) -> Transition:
    """One evaluation of one group: ``detected`` is the detector's state at ``now``; ``baseline_end_ns`` the
    end of the baseline window it learnt from (frozen from here on if this evaluation raises an ALERT)."""
    mute = mute or _UNMUTED
    if track is None:
        # The first sighting of a healthy or unmeasured group is recorded but not worth a message.
        worth = detected in (_drift.ALERT, _drift.WARNING)
        first = Track(
            state=detected,
            since_ns=now,
            notified_ns=now,
            last_alert_ns=now if detected == _drift.ALERT else None,
            last_warning_ns=now if detected in _BAD else None,
            last_measured_ns=None if detected == _drift.NO_DATA else now,
            baseline_end_ns=baseline_end_ns if detected == _drift.ALERT else None,
            announced=not (worth and mute.silenced),
        )
        return Transition(first, record=True, previous=None, notify=worth and not mute.silenced)
    state = _held_state(track, detected, now, policy)
    moved = replace(
        track,
        last_alert_ns=now if detected == _drift.ALERT else track.last_alert_ns,
        last_warning_ns=now if detected in _BAD else track.last_warning_ns,
        last_measured_ns=now if detected != _drift.NO_DATA else track.last_measured_ns,
    )
    held = state != detected
    if state != track.state:
        entering_alert = state == _drift.ALERT
        changed = replace(
            moved,
            state=state,
            since_ns=now,
            notified_ns=now,
            baseline_end_ns=baseline_end_ns if entering_alert else None,
            announced=not mute.silenced,
        )
        return Transition(changed, record=True, previous=track.state, notify=not mute.silenced, held=held)
    if state != _drift.ALERT or mute.silenced or mute.acknowledged:
        return Transition(moved, held=held)
    # Still firing: a reminder when renotify has passed, or at once when its entry was kept back by a silence.
    if not track.announced or now - track.notified_ns >= policy.renotify_ns:
        reminded = replace(moved, notified_ns=now, announced=True)
        return Transition(reminded, record=True, previous=state, notify=True, held=held)
    return Transition(moved, held=held)
