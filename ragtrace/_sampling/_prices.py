"""What judge tokens cost (``Price``, ``DEFAULT_PRICES``, the ``prices=``/``RAGTRACE_JUDGE_PRICES`` tables)
and the daily budget's running sums (``Budget``, ``MeanCost``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ragtrace import environment_variables as env
from ragtrace._exceptions import ConfigurationError


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million judge tokens, input (prompt) and output (completion)."""

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        for name in ("input_per_million", "output_per_million"):
            value = getattr(self, name)
            if not is_number(value) or not math.isfinite(value) or value < 0:
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


@dataclass
class Budget:
    day: int = -1
    tokens: int = 0
    usd: float = 0.0


@dataclass
class MeanCost:
    """What records charged so far cost on average (every charge counts, over the sampler's life)."""

    records: int = 0
    tokens: int = 0
    usd: float = 0.0


def prices_from(given: Mapping[str, Price | tuple[float, float]] | None) -> dict[str, Price]:
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


def env_prices() -> dict[str, Price]:
    prices: dict[str, Price] = {}
    for model, text in env.read_mapping(env.RAGTRACE_JUDGE_PRICES).items():
        parts = text.split("/")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 2 or not all(math.isfinite(v) and v >= 0 for v in values):
            problem = f"not a price: write MODEL=IN/OUT in dollars per million tokens, e.g. {model}=0.15/0.60"
            env.invalid(env.RAGTRACE_JUDGE_PRICES, f"{model}={text}", problem, None, instead="the price is left out")
            continue
        prices[model] = Price(values[0], values[1])
    return prices
