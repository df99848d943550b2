"""What model tokens cost on the pages: ragtrace's list prices (``DEFAULT_PRICES``), extended or overridden by
``RAGTRACE_JUDGE_PRICES`` (``MODEL=IN/OUT`` US dollars per million tokens), the table the judges' budget reads;
and how a model name finds its price."""

from __future__ import annotations

from collections.abc import Mapping

from ragtrace._sampling import DEFAULT_PRICES, Price
from ragtrace._sampling._prices import env_prices

__all__ = ["Price", "cost", "money", "price_of", "price_table"]


def price_table() -> dict[str, Price]:
    """The list prices, with the environment's entries over them."""
    return {**DEFAULT_PRICES, **env_prices()}


def price_of(model: str | None, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model``: its own entry, else the longest entry it starts with (``gpt-4o-mini-2024-07-18``
    is priced as ``gpt-4o-mini``); a provider prefix (``openai:``) is read past. None when no entry fits."""
    if not model:
        return None
    name = model.split(":", 1)[1] if ":" in model else model
    if name in prices:
        return prices[name]
    fitting = [key for key in prices if name.startswith(key)]
    return prices[max(fitting, key=len)] if fitting else None


def cost(model: str | None, prompt_tokens: int, completion_tokens: int, prices: Mapping[str, Price]) -> float | None:
    """US dollars for the tokens of ``model``; 0 for an offline judge (a model in the process bills nothing);
    None when the model has no price."""
    if model and model.startswith("offline"):
        return 0.0
    price = price_of(model, prices)
    return price.cost(prompt_tokens, completion_tokens) if price is not None else None


def money(usd: float | None) -> str:
    """``$0.000360``, or ``no price``."""
    return "no price" if usd is None else f"${usd:.6f}"
