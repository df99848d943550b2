"""Which RAG spans get scored: a deterministic draw by trace id, rules, a throttle and a daily budget.

The draw is ``u = blake2b-64(trace id, 16 bytes big-endian) / 2**64`` in [0, 1). A metric with rate
``r`` is selected when ``u < r``, so the same trace gets the same decision in every process and every
language that has BLAKE2b, and selection is *dense*: a trace selected for a low-rate metric is selected
for every metric of a higher rate too, which keeps metrics comparable on the same traces.

Order of the checks in ``Sampler.decide``: ``never`` rules (-> ``not_sampled``), ``always`` rules
(selected with every metric, whatever the rates), the draw (-> ``not_sampled`` when no metric is
selected), the daily budget (-> ``over_budget``), the per-minute throttle (-> ``throttled``). Rules
pick *whether* to score; throttle and budget still cap what scoring may spend.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from ragtrace import environment_variables as env
from ragtrace import semconv
from ragtrace.environment_variables import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ragtrace._record import RagRecord
    from ragtrace.metrics._base import Cost

_log = logging.getLogger(__name__)

SpanPredicate = Callable[["ReadableSpan"], bool]
"""A user predicate on an ended span."""

RulePredicate = Callable[["ReadableSpan", "RagRecord | None"], bool]
"""A rule's predicate: the ended RAG span and its captured record (``None`` when there is none)."""

_TWO_64: Final = float(2**64)
_SECONDS_PER_DAY: Final = 86_400


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Rule:
    """A named predicate on a RAG span (and its record) used in ``Sampler(always=..., never=...)``.

    Build one with the class methods, or pass a plain ``span -> bool`` callable where a rule is
    expected. A predicate that raises counts as not matching (and is logged once): a rule never
    breaks the request path.
    """

    name: str
    predicate: RulePredicate

    @classmethod
    def span(cls, predicate: SpanPredicate, name: str | None = None) -> Rule:
        """A rule from a ``span -> bool`` callable."""
        label = name or str(getattr(predicate, "__name__", "span_predicate"))
        return cls(label, lambda s, _r: predicate(s))

    @classmethod
    def empty_answer(cls) -> Rule:
        """Matches when the RAG call's answer is empty or blank (read from the record, so it also
        works with content capture off; from ``output.value`` when there is no record)."""

        def _empty(span: ReadableSpan, record: RagRecord | None) -> bool:
            if record is not None:
                return not record.answer.strip()
            value = (span.attributes or {}).get(semconv.OUTPUT_VALUE)
            return value is None or not str(value).strip()

        return cls("empty_answer", _empty)

    @classmethod
    def attribute(cls, key: str, value: object) -> Rule:
        """Matches when the span's attribute ``key`` equals ``value`` (compared as strings, so
        ``attr:user.feedback=bad`` and ``attr:http.status_code=500`` both work from a variable)."""
        expected = str(value)

        def _attribute(span: ReadableSpan, _record: RagRecord | None) -> bool:
            actual = (span.attributes or {}).get(key)
            if isinstance(actual, bool):
                return str(actual).lower() == expected.lower()
            return actual is not None and str(actual) == expected

        return cls(f"attr:{key}={expected}", _attribute)

    @classmethod
    def name_matches(cls, pattern: str) -> Rule:
        """Matches when the span name matches the shell-style ``pattern`` (``fnmatch``), e.g. ``*health*``."""

        def _name(span: ReadableSpan, _record: RagRecord | None) -> bool:
            return fnmatch.fnmatchcase(span.name, pattern)

        return cls(f"name:{pattern}", _name)

    @classmethod
    def parse(cls, spec: str, *, variable: str = "rule") -> Rule:
        """Parse one rule spec: ``empty_answer``, ``name:GLOB`` or ``attr:KEY=VALUE``."""
        spec = spec.strip()
        if spec == "empty_answer":
            return cls.empty_answer()
        kind, sep, rest = spec.partition(":")
        if sep and kind == "name" and rest:
            return cls.name_matches(rest)
        if sep and kind == "attr":
            key, eq, value = rest.partition("=")
            if eq and key.strip():
                return cls.attribute(key.strip(), value.strip())
        raise ConfigurationError(
            f"{variable}: {spec!r} is not a rule: write empty_answer, name:GLOB (e.g. name:*health*) "
            "or attr:KEY=VALUE (e.g. attr:user.feedback=bad)"
        )


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million judge tokens, input (prompt) and output (completion)."""

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        for name in ("input_per_million", "output_per_million"):
            value = getattr(self, name)
            if not _is_number(value) or not math.isfinite(value) or value < 0:
                raise ConfigurationError(
                    f"Price({name}={value!r}) is invalid: pass US dollars per million tokens as a number >= 0, "
                    "e.g. Price(0.15, 0.60)"
                )

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Dollars for this many tokens."""
        return (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6


DEFAULT_PRICES: Final[Mapping[str, Price]] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "text-embedding-3-small": Price(0.02, 0.0),
    "text-embedding-3-large": Price(0.13, 0.0),
}
"""List prices used when ``RAGTRACE_BUDGET_USD_PER_DAY`` is set; extend with ``prices=`` or
``RAGTRACE_JUDGE_PRICES``. Offline judges (``offline:*``) cost nothing."""


@dataclass(frozen=True, slots=True)
class Selection:
    """The sampler's answer for one RAG span.

    ``selected`` spans are scored with ``metrics`` (empty tuple: every metric of the suite). Others
    carry ``decision`` (one of ``semconv.DECISION_*``) and are exported at once. ``rule`` names the
    rule that decided, if any.
    """

    selected: bool
    decision: str
    metrics: tuple[str, ...] = ()
    rule: str | None = None
    window: int | None = field(default=None, compare=False, repr=False)
    """The throttle minute that counted this selection (``None``: no throttle), for ``Sampler.refund``."""


_NOT_SAMPLED: Final = Selection(False, semconv.DECISION_NOT_SAMPLED)
_THROTTLED: Final = Selection(False, semconv.DECISION_THROTTLED)
_OVER_BUDGET: Final = Selection(False, semconv.DECISION_OVER_BUDGET)


def draw(trace_id: int) -> float:
    """The trace's deterministic draw in [0, 1): BLAKE2b-64 of the 16-byte big-endian trace id."""
    digest = hashlib.blake2b(trace_id.to_bytes(16, "big"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _TWO_64


@dataclass
class _Budget:
    day: int = -1
    tokens: int = 0
    usd: float = 0.0


@dataclass
class _MeanCost:
    """What records charged so far cost on average (every charge counts, over the sampler's life)."""

    records: int = 0
    tokens: int = 0
    usd: float = 0.0


class Sampler:
    """Decides, per RAG span, whether it is scored and with which metrics. Thread-safe; ``decide`` is O(1).

    ``rate`` (default 0.1, ``RAGTRACE_SAMPLE_RATE``) applies to every metric without its own entry in
    ``metric_rates`` (``RAGTRACE_METRIC_RATES``). ``always``/``never`` are rules (``Rule`` or
    ``span -> bool``; ``RAGTRACE_SAMPLE_ALWAYS``/``RAGTRACE_SAMPLE_NEVER``). ``throttle_per_minute``
    caps records scored per minute; ``budget_tokens_per_day``/``budget_usd_per_day`` cap judge spend
    per UTC day, priced with ``prices`` over ``DEFAULT_PRICES``. Constructor arguments win over
    variables (a variable is read only when its argument is ``None``); a wrong value raises
    ``ConfigurationError`` naming the fix.

    The budget is checked when a span is picked and charged when its scoring ends (``charge``). So that
    the records picked and not yet charged cannot overrun it by a whole queue, ``decide`` counts each of
    them (``in_flight``) at the mean cost of the records charged so far, and while nothing has been
    charged yet it picks one record at a time. With records of similar cost the budget is overrun by at
    most about one record's worth.
    """

    def __init__(
        self,
        rate: float | None = None,
        *,
        metric_rates: Mapping[str, float] | None = None,
        always: Iterable[Rule | SpanPredicate] | None = None,
        never: Iterable[Rule | SpanPredicate] | None = None,
        throttle_per_minute: int | None = None,
        budget_tokens_per_day: int | None = None,
        budget_usd_per_day: float | None = None,
        prices: Mapping[str, Price | tuple[float, float]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if rate is None:
            env_rate = env.read_float(env.RAGTRACE_SAMPLE_RATE, 0.1, minimum=0, maximum=1)
            rate = 0.1 if env_rate is None else env_rate
        self.rate = _check_rate("rate", rate)
        rates = dict(metric_rates) if metric_rates is not None else _env_metric_rates()
        self.metric_rates: Mapping[str, float] = {k: _check_rate(f"metric_rates[{k!r}]", v) for k, v in rates.items()}
        self.always: tuple[Rule, ...] = _rules(always, env.RAGTRACE_SAMPLE_ALWAYS)
        self.never: tuple[Rule, ...] = _rules(never, env.RAGTRACE_SAMPLE_NEVER)
        self.throttle_per_minute = _check_min(
            "throttle_per_minute",
            throttle_per_minute
            if throttle_per_minute is not None
            else env.read_int(env.RAGTRACE_THROTTLE_PER_MINUTE, None),
        )
        self.budget_tokens_per_day = _check_min(
            "budget_tokens_per_day",
            budget_tokens_per_day
            if budget_tokens_per_day is not None
            else env.read_int(env.RAGTRACE_BUDGET_TOKENS_PER_DAY, None),
        )
        usd = (
            budget_usd_per_day
            if budget_usd_per_day is not None
            else env.read_float(env.RAGTRACE_BUDGET_USD_PER_DAY, None, minimum=0)
        )
        if usd is not None and (not _is_number(usd) or not math.isfinite(usd) or usd < 0):
            raise ConfigurationError(
                f"budget_usd_per_day={usd!r} is invalid: set it to a number of dollars >= 0, or None for no limit"
            )
        self.budget_usd_per_day = float(usd) if usd is not None else None
        table = dict(DEFAULT_PRICES)
        table.update(_env_prices())
        table.update(_prices(prices))
        self.prices: Mapping[str, Price] = table
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._window = -1
        self._window_count = 0
        self._budget = _Budget()
        self._mean = _MeanCost()
        self._broken_rules: set[str] = set()
        _SAMPLERS.add(self)

    @staticmethod
    def draw(trace_id: int) -> float:
        """The trace's deterministic draw in [0, 1), the number ``decide`` compares with a rate: a trace
        is sampled at rate ``r`` when ``Sampler.draw(trace_id) < r``. It depends on the trace id alone
        (BLAKE2b-64 of its 16 big-endian bytes), so another process, a collector scoring what the app
        did not, picks the same traces at the same rate."""
        return draw(trace_id)

    # -- the decision (request path) -----------------------------------------------------------

    def decide(
        self,
        trace_id: int,
        span: ReadableSpan,
        record: RagRecord | None = None,
        metrics: Sequence[str] = (),
        in_flight: int = 0,
    ) -> Selection:
        """Decide for one RAG span. ``metrics`` are the suite's metric names (for per-metric rates).

        ``in_flight``: records picked earlier and not yet charged (queued or being scored); with a
        budget each counts at the mean cost of a charged record, and while none has been charged yet
        only one record is picked at a time. A span that is picked and then not handed to scoring
        gives its throttle slot back with ``refund``.
        """
        for rule in self.never:
            if self._matches(rule, span, record):
                return Selection(False, semconv.DECISION_NOT_SAMPLED, rule=rule.name)
        forced: Rule | None = None
        for rule in self.always:
            if self._matches(rule, span, record):
                forced = rule
                break
        if forced is not None:
            chosen = tuple(metrics)
        else:
            u = draw(trace_id)
            if not metrics or not self.metric_rates:
                if u >= self.rate:
                    return _NOT_SAMPLED
                chosen = tuple(metrics)
            else:
                chosen = tuple(m for m in metrics if u < self.metric_rates.get(m, self.rate))
                if not chosen:
                    return _NOT_SAMPLED
        admitted = self._admit(in_flight)
        if isinstance(admitted, Selection):
            return admitted
        return Selection(True, semconv.DECISION_EVALUATED, chosen, forced.name if forced else None, window=admitted)

    def refund(self, selection: Selection) -> None:
        """Give back the throttle slot of a picked span that was not handed to scoring after all (the
        queue was full, its record was missing): only spans submitted for scoring count against it."""
        if selection.window is None:
            return
        with self._lock:
            if self._window == selection.window and self._window_count > 0:
                self._window_count -= 1

    def rate_for(self, metric: str) -> float:
        """The sampling rate of one metric."""
        return self.metric_rates.get(metric, self.rate)

    # -- spend --------------------------------------------------------------------------------

    def price_for(self, model: str) -> Price | None:
        """The price of a judge model (``openai:gpt-4o-mini`` or ``gpt-4o-mini``); offline judges are free."""
        if model.startswith("offline:"):
            return Price(0.0, 0.0)
        bare = model.split(":", 1)[1] if ":" in model else model
        return self.prices.get(bare) or self.prices.get(model)

    def check_judge(self, judge_name: str) -> None:
        """Raise ``ConfigurationError`` when a dollar budget is set and the judge's model has no price."""
        if self.budget_usd_per_day is not None and self.price_for(judge_name) is None:
            raise ConfigurationError(
                f"budget_usd_per_day is set but judge {judge_name!r} has no price: add one with "
                f"prices={{'{judge_name.split(':', 1)[-1]}': (input_usd_per_million, output_usd_per_million)}} "
                f"or {env.RAGTRACE_JUDGE_PRICES}=model=IN/OUT"
            )

    def charge(self, judge_name: str, cost: Cost) -> None:
        """Record what scoring one record spent against today's budget (and the mean cost ``decide`` uses)."""
        if self.budget_tokens_per_day is None and self.budget_usd_per_day is None:
            return
        price = self.price_for(judge_name)
        usd = price.cost(cost.prompt_tokens, cost.completion_tokens) if price is not None else 0.0
        tokens = cost.prompt_tokens + cost.completion_tokens
        with self._lock:
            self._roll_day()
            self._budget.tokens += tokens
            self._budget.usd += usd
            self._mean.records += 1
            self._mean.tokens += tokens
            self._mean.usd += usd

    def spent_today(self) -> tuple[int, float]:
        """(tokens, dollars) charged so far this UTC day."""
        with self._lock:
            self._roll_day()
            return self._budget.tokens, self._budget.usd

    # -- internals ----------------------------------------------------------------------------

    def _admit(self, in_flight: int) -> Selection | int | None:
        """The refusal (``over_budget`` or ``throttled``), else the throttle window that counted the
        record (``None`` without a throttle)."""
        if self.throttle_per_minute is None and self.budget_tokens_per_day is None and self.budget_usd_per_day is None:
            return None
        with self._lock:
            self._roll_day()
            if self._over_budget(max(in_flight, 0)):
                return _OVER_BUDGET
            if self.throttle_per_minute is None:
                return None
            window = int(self._clock() // 60)
            if window != self._window:
                self._window = window
                self._window_count = 0
            if self._window_count >= self.throttle_per_minute:
                return _THROTTLED
            self._window_count += 1
            return window

    def _over_budget(self, in_flight: int) -> bool:
        # Under the lock. What is spent, plus an estimate for every record picked and not yet
        # charged: without the estimate a burst would all pass before the first charge.
        tokens_limit, usd_limit = self.budget_tokens_per_day, self.budget_usd_per_day
        if tokens_limit is None and usd_limit is None:
            return False
        spent, mean = self._budget, self._mean
        if (tokens_limit is not None and spent.tokens >= tokens_limit) or (
            usd_limit is not None and spent.usd >= usd_limit
        ):
            return True
        if in_flight == 0:
            return False
        if mean.records == 0:
            return True  # no record's cost is known yet: one at a time until the first is charged
        return (tokens_limit is not None and spent.tokens + in_flight * mean.tokens / mean.records >= tokens_limit) or (
            usd_limit is not None and spent.usd + in_flight * mean.usd / mean.records >= usd_limit
        )

    def _roll_day(self) -> None:
        day = int(self._wall_clock() // _SECONDS_PER_DAY)
        if day != self._budget.day:
            self._budget = _Budget(day=day)

    def _matches(self, rule: Rule, span: ReadableSpan, record: RagRecord | None) -> bool:
        try:
            return bool(rule.predicate(span, record))
        except Exception:
            if rule.name not in self._broken_rules:
                self._broken_rules.add(rule.name)
                _log.exception("ragtrace: sampling rule %r raised; treating it as not matching", rule.name)
            return False


_SAMPLERS: weakref.WeakSet[Sampler] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # Another thread may have held a sampler's lock at fork time; in the child it would never be
    # released. Counts carry over (the child shares the parent's throttle window and budget so far).
    for sampler in list(_SAMPLERS):
        sampler._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _prices(given: Mapping[str, Price | tuple[float, float]] | None) -> dict[str, Price]:
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ConfigurationError(
            f"prices={given!r} is not a mapping: pass {{'model': (input_usd_per_million, output_usd_per_million)}}"
        )
    table: dict[str, Price] = {}
    for model, price in given.items():
        if not isinstance(model, str) or not model:
            raise ConfigurationError(
                f"prices: {model!r} is not a model name: use the judge's model, e.g. 'gpt-4o-mini'"
            )
        if isinstance(price, Price):
            table[model] = price
            continue
        if not isinstance(price, (tuple, list)) or len(price) != 2:
            raise ConfigurationError(
                f"prices[{model!r}]={price!r} is not a price: pass (input_usd_per_million, output_usd_per_million), "
                f"e.g. prices={{{model!r}: (0.15, 0.60)}}"
            )
        try:
            table[model] = Price(price[0], price[1])
        except ConfigurationError as exc:
            raise ConfigurationError(f"prices[{model!r}]: {exc}") from None
    return table


def _check_rate(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0.0 <= value <= 1.0):
        raise ConfigurationError(f"{name}={value!r} is not a rate: set it to a number between 0 and 1")
    return float(value)


def _check_min(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{name}={value!r} is invalid: set it to a whole number >= 0, or None for no limit")
    return value


def _env_metric_rates() -> dict[str, float]:
    rates: dict[str, float] = {}
    for metric, text in env.read_mapping(env.RAGTRACE_METRIC_RATES).items():
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not (0.0 <= value <= 1.0):
            raise ConfigurationError(
                f"{env.RAGTRACE_METRIC_RATES}: {metric}={text!r} is not a rate: write e.g. {metric}=0.5"
            )
        rates[metric] = value
    return rates


def _env_prices() -> dict[str, Price]:
    prices: dict[str, Price] = {}
    for model, text in env.read_mapping(env.RAGTRACE_JUDGE_PRICES).items():
        parts = text.split("/")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 2 or not all(math.isfinite(v) and v >= 0 for v in values):
            raise ConfigurationError(
                f"{env.RAGTRACE_JUDGE_PRICES}: {model}={text!r} is not a price: write MODEL=IN/OUT in dollars per "
                f"million tokens, e.g. {model}=0.15/0.60"
            )
        prices[model] = Price(values[0], values[1])
    return prices


def _rules(given: Iterable[Rule | SpanPredicate] | None, variable: str) -> tuple[Rule, ...]:
    if given is None:
        specs = env.read_list(variable) or []
        return tuple(Rule.parse(spec, variable=variable) for spec in specs)
    rules: list[Rule] = []
    for item in given:
        if isinstance(item, Rule):
            rules.append(item)
        elif callable(item):
            rules.append(Rule.span(item))
        else:
            raise ConfigurationError(f"{item!r} is not a rule: pass a ragtrace.Rule or a callable span -> bool")
    return tuple(rules)


__all__ = ["DEFAULT_PRICES", "Price", "Rule", "Sampler", "Selection", "draw"]
