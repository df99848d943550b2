"""``Sampler``: decides per RAG span whether it is scored and with which metrics (rules, rates, budget, throttle)."""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from ragtrace import _settings as settings
from ragtrace import environment_variables as env
from ragtrace import semconv
from ragtrace._exceptions import ConfigurationError
from ragtrace._fork import at_fork_in_child
from ragtrace._sampling._prices import DEFAULT_PRICES, Budget, MeanCost, Price, env_prices, prices_from
from ragtrace._sampling._rules import Rule, SpanPredicate, rules_from
from ragtrace._sampling._selection import NOT_SAMPLED, OVER_BUDGET, THROTTLED, Selection, draw

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ragtrace._record import RagRecord
    from ragtrace.metrics._base import Cost

_log = logging.getLogger("ragtrace._sampling")

_SECONDS_PER_DAY: Final = 86_400

RATE: Final = settings.rate("rate", env.RAGTRACE_SAMPLE_RATE, default=0.1)
# A mistyped limit stops spending (0) rather than lifting the limit.
THROTTLE: Final = settings.limit("throttle_per_minute", env.RAGTRACE_THROTTLE_PER_MINUTE, fallback=0)
BUDGET_TOKENS: Final = settings.limit("budget_tokens_per_day", env.RAGTRACE_BUDGET_TOKENS_PER_DAY, fallback=0)
BUDGET_USD: Final = settings.dollars("budget_usd_per_day", env.RAGTRACE_BUDGET_USD_PER_DAY, fallback=0.0)


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
        self.rate = RATE.resolve(rate)
        rates = dict(metric_rates) if metric_rates is not None else _env_metric_rates()
        self.metric_rates: Mapping[str, float] = {k: RATE.check(f"metric_rates[{k!r}]", v) for k, v in rates.items()}
        self.always: tuple[Rule, ...] = rules_from(always, env.RAGTRACE_SAMPLE_ALWAYS)
        self.never: tuple[Rule, ...] = rules_from(never, env.RAGTRACE_SAMPLE_NEVER)
        self.throttle_per_minute = THROTTLE.resolve(throttle_per_minute)
        self.budget_tokens_per_day = BUDGET_TOKENS.resolve(budget_tokens_per_day)
        self.budget_usd_per_day = BUDGET_USD.resolve(budget_usd_per_day)
        table = dict(DEFAULT_PRICES)
        table.update(env_prices())
        table.update(prices_from(prices))
        self.prices: Mapping[str, Price] = table
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._window = -1
        self._window_count = 0
        self._budget = Budget()
        self._mean = MeanCost()
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
                    return NOT_SAMPLED
                chosen = tuple(metrics)
            else:
                chosen = tuple(m for m in metrics if u < self.metric_rates.get(m, self.rate))
                if not chosen:
                    return NOT_SAMPLED
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
                return OVER_BUDGET
            if self.throttle_per_minute is None:
                return None
            window = int(self._clock() // 60)
            if window != self._window:
                self._window = window
                self._window_count = 0
            if self._window_count >= self.throttle_per_minute:
                return THROTTLED
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
            self._budget = Budget(day=day)

    def _matches(self, rule: Rule, span: ReadableSpan, record: RagRecord | None) -> bool:
        try:
            return bool(rule.predicate(span, record))
        except Exception:
            if rule.name not in self._broken_rules:
                self._broken_rules.add(rule.name)
                _log.exception("ragtrace: sampling rule %r raised; treating it as not matching", rule.name)
            return False


_SAMPLERS: weakref.WeakSet[Sampler] = weakref.WeakSet()


@at_fork_in_child
def _renew_locks_in_child() -> None:
    # Another thread may have held a sampler's lock at fork time; in the child it would never be
    # released. Counts carry over (the child shares the parent's throttle window and budget so far).
    for sampler in list(_SAMPLERS):
        sampler._lock = threading.Lock()


def _env_metric_rates() -> dict[str, float]:
    rates: dict[str, float] = {}
    for metric, text in env.read_mapping(env.RAGTRACE_METRIC_RATES).items():
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not (0.0 <= value <= 1.0):
            # Rate 0: a mistyped rate does not score a metric more often than was meant.
            problem = f"not a rate: write e.g. {metric}=0.5"
            env.invalid(env.RAGTRACE_METRIC_RATES, f"{metric}={text}", problem, None, instead=f"{metric} is not scored")
            value = 0.0
        rates[metric] = value
    return rates
