"""Which RAG spans get scored: a deterministic draw by trace id, rules, a throttle and a daily budget.

The draw is ``u = blake2b-64(trace id, 16 bytes big-endian) / 2**64`` in [0, 1). A metric with rate
``r`` is selected when ``u < r``, so the same trace gets the same decision in every process and every
language that has BLAKE2b, and selection is *dense*: a trace selected for a low-rate metric is selected
for every metric of a higher rate too, which keeps metrics comparable on the same traces.

Order of the checks in ``Sampler.decide``: ``never`` rules (-> ``not_sampled``), ``always`` rules
(selected with every metric, whatever the rates), the draw (-> ``not_sampled`` when no metric is
selected), the daily budget (-> ``over_budget``), the per-minute throttle (-> ``throttled``). Rules
pick *whether* to score; throttle and budget still cap what scoring may spend.

The parts: ``_rules.py`` (rules), ``_prices.py`` (prices and the budget's sums), ``_selection.py``
(the draw and the answer), ``_sampler.py`` (the ``Sampler``: rates, budget, throttle).
"""

from __future__ import annotations

from ragtrace._sampling._prices import DEFAULT_PRICES, Price
from ragtrace._sampling._rules import Rule, RulePredicate, SpanPredicate
from ragtrace._sampling._sampler import Sampler
from ragtrace._sampling._selection import Selection, draw

__all__ = ["DEFAULT_PRICES", "Price", "Rule", "RulePredicate", "Sampler", "Selection", "SpanPredicate", "draw"]
