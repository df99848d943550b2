"""What an alert rules file says, as frozen values: rules, their detector parameters, sinks, the rule set."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

RuleKind = Literal["threshold", "spike", "drift", "agreement"]
GroupBy = Literal["all", "service", "route", "service_route"]
SinkType = str
"""A registered sink type: ``log``, ``stdout``, ``webhook`` or one added with ``_alerts.register_sink``."""
DriftMethod = Literal["psi", "ks"]
AgreementStatistic = Literal["balanced_accuracy", "auroc"]


_NS_PER_S: Final = 1_000_000_000


@dataclass(frozen=True, slots=True)
class ThresholdParams:
    """Mean of the metric over ``window_ns`` against ``threshold`` (the bad side follows the metric's
    direction); ``warning`` is an earlier level on the same side."""

    threshold: float
    warning: float | None = None
    window_ns: int = 15 * 60 * _NS_PER_S
    min_records: int = 20


@dataclass(frozen=True, slots=True)
class SpikeParams:
    """Bernoulli CUSUM of bad records (beyond ``cutoff``) in the recent window against the rate learnt
    from the baseline window just before it (or the fixed ``baseline_rate``). See ``_drift.CusumDesign``.

    ``cutoff`` 0.5: for hallucination, the judge expects more than half the answer's claims unsupported.
    Scores weigh claims by the judge's support probability, so a grounded answer scores about 0.1-0.3,
    not 0 (docs/metrics.md); a cutoff of 0 would call nearly every answer bad."""

    cutoff: float = 0.5
    shift: float = 4.0
    h: float = 8.0
    warning_h: float = 4.0
    min_rate: float = 0.01
    window_ns: int = 6 * 3600 * _NS_PER_S
    max_records: int = 2000
    baseline_ns: int = 7 * 86400 * _NS_PER_S
    baseline_rate: float | None = None
    min_records: int = 20
    min_baseline: int = 200


@dataclass(frozen=True, slots=True)
class DriftParams:
    """Distribution of the metric in the recent window against the baseline window just before it."""

    method: DriftMethod = "psi"
    warning: float | None = None
    alert: float | None = None
    window_ns: int = 24 * 3600 * _NS_PER_S
    baseline_ns: int = 7 * 86400 * _NS_PER_S
    min_records: int = 50
    bins: int = 10


@dataclass(frozen=True, slots=True)
class AgreementParams:
    """The judge's agreement with the people who reviewed its records (``_agreement``: balanced accuracy at the
    judge's cut, or AUROC) over the reviews given in the last ``window_ns``, against ``threshold``: ALERT below it,
    WARNING below ``warning``. Fewer than ``min_reviews`` reviews, or reviews of one kind only (every answer said
    right, or every one wrong: neither statistic is defined), is NO_DATA."""

    threshold: float
    warning: float | None = None
    statistic: AgreementStatistic = "balanced_accuracy"
    window_ns: int = 7 * 86400 * _NS_PER_S
    min_reviews: int = 20


Params = ThresholdParams | SpikeParams | DriftParams | AgreementParams


DEFAULT_KEEP_FIRING_FOR_NS: Final = 15 * 60 * _NS_PER_S
"""How long an ALERT outlives the last evaluation that said ALERT, by default (``keep_firing_for``)."""
DEFAULT_NO_DATA_AFTER_NS: Final = 15 * 60 * _NS_PER_S
"""How long a measured state outlives the last measured evaluation, by default (``no_data_after``)."""


@dataclass(frozen=True, slots=True)
class AlertRule:
    """One alert rule. ``service``/``route`` restrict it to one service or route (None: all);
    ``group_by`` evaluates it separately per service, route or both; ``sinks`` names the sinks it
    notifies (None: every sink).

    ``keep_firing_for_ns``: an ALERT stays ALERT until its detector has not said ALERT for this long (a
    sustained spike whose statistic dips, or whose window runs thin, stays one alert), and a WARNING until it
    has said neither; 0 follows the detector at once.
    ``no_data_after_ns``: a group leaves a measured state (OK, WARNING, ALERT) for NO_DATA only after its
    detector has said NO_DATA for this long, so a late export is not a change of state; 0 at once.
    """

    name: str
    kind: RuleKind
    metric: str
    params: Params
    service: str | None = None
    route: str | None = None
    group_by: GroupBy = "service"
    renotify_ns: int = 4 * 3600 * _NS_PER_S
    sinks: tuple[str, ...] | None = None
    keep_firing_for_ns: int = DEFAULT_KEEP_FIRING_FOR_NS
    no_data_after_ns: int = DEFAULT_NO_DATA_AFTER_NS


@dataclass(frozen=True, slots=True)
class SinkConfig:
    """Where notifications go. ``webhook`` POSTs JSON with a Slack-compatible ``text`` field."""

    name: str
    type: SinkType
    url: str | None = None
    timeout: float = 5.0
    retries: int = 3
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class RuleSet:
    """Everything a rules file says."""

    rules: tuple[AlertRule, ...]
    sinks: tuple[SinkConfig, ...]
    interval_ns: int = 60 * _NS_PER_S
    source: str = "<defaults>"


_THRESHOLD: Final = ThresholdParams(threshold=0.7)
_DRIFT: Final = DriftParams()
DEFAULT_SPIKE: Final = SpikeParams()
"""The spike rule's default parameters (those of ``default_rules.toml``); the benchmark measures them."""
