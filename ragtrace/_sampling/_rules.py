"""Sampling rules: named predicates on a RAG span (and its record) for ``Sampler(always=..., never=...)``.

``Rule.parse`` reads the ``RAGTRACE_SAMPLE_ALWAYS``/``NEVER`` forms; ``rules_from`` takes what a caller
passed (rules or plain ``span -> bool`` callables) or, when nothing was passed, the variable.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragtrace import environment_variables as env
from ragtrace import semconv
from ragtrace._exceptions import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ragtrace._record import RagRecord


SpanPredicate = Callable[["ReadableSpan"], bool]
"""A user predicate on an ended span."""

RulePredicate = Callable[["ReadableSpan", "RagRecord | None"], bool]
"""A rule's predicate: the ended RAG span and its captured record (``None`` when there is none)."""


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
    def partial_answer(cls) -> Rule:
        """Matches a RAG call whose answer stream was closed before it ended
        (``ragtrace.answer.partial``): e.g. ``never=[Rule.partial_answer()]`` leaves them unscored."""

        def _partial(span: ReadableSpan, _record: RagRecord | None) -> bool:
            return (span.attributes or {}).get(semconv.RAGTRACE_ANSWER_PARTIAL) is True

        return cls("partial_answer", _partial)

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
        """Parse one rule spec: ``empty_answer``, ``partial_answer``, ``name:GLOB`` or ``attr:KEY=VALUE``."""
        spec = spec.strip()
        if spec == "empty_answer":
            return cls.empty_answer()
        if spec == "partial_answer":
            return cls.partial_answer()
        kind, sep, rest = spec.partition(":")
        if sep and kind == "name" and rest:
            return cls.name_matches(rest)
        if sep and kind == "attr":
            key, eq, value = rest.partition("=")
            if eq and key.strip():
                return cls.attribute(key.strip(), value.strip())
        raise ConfigurationError(
            f"{variable}: {spec!r} is not a rule: write empty_answer, partial_answer, name:GLOB (e.g. name:*health*) "
            "or attr:KEY=VALUE (e.g. attr:user.feedback=bad)"
        )


def rules_from(given: Iterable[Rule | SpanPredicate] | None, variable: str) -> tuple[Rule, ...]:
    if given is None:
        parsed: list[Rule] = []
        for spec in env.read_list(variable) or []:
            try:
                parsed.append(Rule.parse(spec, variable=variable))
            except ConfigurationError as exc:
                if variable == env.RAGTRACE_SAMPLE_NEVER:
                    # A never-rule that does not parse matches every span: what it meant to keep out of
                    # scoring (health checks, private routes) stays out, and the gap shows as not_sampled.
                    env.invalid(variable, spec, str(exc), None, instead="no span is scored until it is fixed")
                    parsed.append(Rule(f"invalid:{spec}", lambda _s, _r: True))
                else:
                    env.invalid(variable, spec, str(exc), None, instead="the rule is left out")
        return tuple(parsed)
    rules: list[Rule] = []
    for item in given:
        if isinstance(item, Rule):
            rules.append(item)
        elif callable(item):
            rules.append(Rule.span(item))
        else:
            raise ConfigurationError(f"{item!r} is not a rule: pass a ragtrace.Rule or a callable span -> bool")
    return tuple(rules)
