"""The joiner's settings: whether it runs, which spans users name RAG roots, its bounds, and the other
instrumentations' privacy switches.

Constructor arguments win over variables, variables over defaults, as everywhere in ragtrace
(``ragtrace._settings``): a wrong argument raises ``ConfigurationError`` naming the fix; a wrong variable
warns once and the default (or the safe value) is used.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ragtrace import _settings as settings
from ragtrace import environment_variables as env
from ragtrace._exceptions import ConfigurationError
from ragtrace._foreign._parts import OPENINFERENCE, OPENLLMETRY, RERANK
from ragtrace._sampling._rules import Rule, SpanPredicate, rules_from

# The variables are documented in ragtrace.environment_variables, with every RAGTRACE_* name.
RAGTRACE_RECOGNIZE = env.RAGTRACE_RECOGNIZE
RAGTRACE_RAG_ROOTS = env.RAGTRACE_RAG_ROOTS
RAGTRACE_JOIN_MAX_TRACES = env.RAGTRACE_JOIN_MAX_TRACES
RAGTRACE_JOIN_MAX_BYTES = env.RAGTRACE_JOIN_MAX_BYTES
RAGTRACE_JOIN_MAX_SECONDS = env.RAGTRACE_JOIN_MAX_SECONDS

VARIABLES: Final = (
    RAGTRACE_RECOGNIZE,
    RAGTRACE_RAG_ROOTS,
    RAGTRACE_JOIN_MAX_TRACES,
    RAGTRACE_JOIN_MAX_BYTES,
    RAGTRACE_JOIN_MAX_SECONDS,
)

OPENINFERENCE_HIDE: Final = (
    "OPENINFERENCE_HIDE_INPUTS",
    "OPENINFERENCE_HIDE_OUTPUTS",
    "OPENINFERENCE_HIDE_RETRIEVAL_DOCUMENTS",
)
"""OpenInference's switches that keep the query, the answer or the documents off its spans (``true``, any case)."""

TRACELOOP_TRACE_CONTENT: Final = "TRACELOOP_TRACE_CONTENT"
"""OpenLLMetry's switch: anything but ``true`` (any case; unset is true) keeps content off its spans."""

MAX_TRACES: Final = settings.whole_number("join_max_traces", RAGTRACE_JOIN_MAX_TRACES, default=1024, minimum=1)
MAX_BYTES: Final = settings.whole_number("join_max_bytes", RAGTRACE_JOIN_MAX_BYTES, default=64 << 20, minimum=1)
MAX_SECONDS: Final = settings.seconds("join_max_seconds", RAGTRACE_JOIN_MAX_SECONDS, default=300.0)


def hidden_shapes() -> frozenset[str]:
    """The shapes whose instrumentations were told (by their variables) to keep content off their spans.

    Read as the instrumentations read them, so a record from such a shape is never scored from text
    that slipped past the switch (say, a prompt template's variables).
    """
    hidden: set[str] = set()
    if any((os.environ.get(name) or "").strip().lower() == "true" for name in OPENINFERENCE_HIDE):
        hidden.update((OPENINFERENCE, RERANK))
    if (os.environ.get(TRACELOOP_TRACE_CONTENT) or "true").strip().lower() != "true":
        hidden.add(OPENLLMETRY)
    return frozenset(hidden)


@dataclass(frozen=True, slots=True)
class JoinSettings:
    """What the joiner does: ``recognize`` (off: only ragtrace's own RAG spans are scored), ``roots`` (rules
    naming RAG roots), its bounds, and ``hidden`` (shapes whose content switch is off)."""

    recognize: bool = True
    roots: tuple[Rule, ...] = ()
    max_traces: int = MAX_TRACES.default
    max_bytes: int = MAX_BYTES.default
    max_seconds: float = MAX_SECONDS.default
    hidden: frozenset[str] = frozenset()

    @classmethod
    def resolve(
        cls,
        *,
        recognize: bool | None = None,
        rag_roots: Iterable[Rule | SpanPredicate] | None = None,
        max_traces: int | None = None,
        max_bytes: int | None = None,
        max_seconds: float | None = None,
    ) -> JoinSettings:
        """Settings from the arguments, else the variables, else the defaults (see the module docstring)."""
        if recognize is None:
            recognize = bool(env.read_bool(RAGTRACE_RECOGNIZE, True, fallback=False))
        elif not isinstance(recognize, bool):
            raise ConfigurationError(f"recognize={recognize!r} is not a bool: pass True or False")
        if isinstance(rag_roots, (str, Rule)) or (rag_roots is not None and callable(rag_roots)):
            raise ConfigurationError(f"rag_roots={rag_roots!r} is not a list: pass e.g. [Rule.name_matches('ask*')]")
        return cls(
            recognize=recognize,
            roots=rules_from(rag_roots, RAGTRACE_RAG_ROOTS),
            max_traces=MAX_TRACES.resolve(max_traces),
            max_bytes=MAX_BYTES.resolve(max_bytes),
            max_seconds=MAX_SECONDS.resolve(max_seconds),
            hidden=hidden_shapes(),
        )
