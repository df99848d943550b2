"""Which judge scores when the user names none.

``RAGTRACE_JUDGE`` = ``auto`` (default), ``openai``, ``offline`` or ``tiered``. ``auto`` picks the
OpenAI-compatible judge when ``OPENAI_API_KEY``, ``RAGTRACE_JUDGE_API_KEY`` or
``RAGTRACE_JUDGE_BASE_URL`` is set, else the offline judge. The OpenAI judge reads the other
``RAGTRACE_JUDGE_*`` variables itself (model, timeout, retries, concurrency). The offline judge
keeps one model worker whatever ``RAGTRACE_JUDGE_MAX_CONCURRENCY`` says: that variable bounds HTTP
calls in flight, and the offline judge's work is CPU that the app shares. ``tiered`` builds a
``TieredJudge``: the offline judge on every record, the OpenAI-compatible one (configured by the same
variables) on the records the offline judge finds doubtful and a fixed audit share.

The choice is logged once per process (INFO on logger ``ragtrace``).
"""

from __future__ import annotations

import logging
import threading

from ragtrace import environment_variables as env
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges._base import Judge

_logger = logging.getLogger("ragtrace")
_CHOICES = ("auto", "openai", "offline", "tiered")
_OPENAI_API_KEY = "OPENAI_API_KEY"
_logged: set[str] = set()
_logged_lock = threading.Lock()


def judge_choice(choice: str | None = None) -> tuple[str, str]:
    """The judge kind ``default_judge`` builds (``openai``, ``offline`` or ``tiered``) and why: ``choice``
    when given (one of auto, openai, offline, tiered), else ``RAGTRACE_JUDGE``; ``auto`` decides from the
    keys set.

    Raises ``ConfigurationError`` when ``choice`` is not one of auto, openai, offline, tiered; an unknown
    ``RAGTRACE_JUDGE`` is reported as a WARNING and read as ``offline`` (nothing leaves the process).
    """
    if choice is None:
        raw = env.read_str(env.RAGTRACE_JUDGE, "auto") or "auto"
        choice = raw.lower()
        if choice not in _CHOICES:
            # Offline, not auto: a mistyped "offline" must not send the app's content to an API because a
            # key happens to be set.
            problem = "set it to 'auto', 'openai', 'offline' or 'tiered'"
            choice = env.invalid(env.RAGTRACE_JUDGE, raw, problem, "offline", instead="using the offline judge")
        source = f"{env.RAGTRACE_JUDGE}={choice}"
    elif choice in _CHOICES:
        source = f"judge={choice!r}"
    else:
        raise ConfigurationError(f"judge={choice!r} is unknown: pass 'auto', 'openai', 'offline' or 'tiered'")
    if choice != "auto":
        return choice, source
    for variable in (env.RAGTRACE_JUDGE_BASE_URL, env.RAGTRACE_JUDGE_API_KEY, _OPENAI_API_KEY):
        if env.read_str(variable) is not None:
            return "openai", f"{variable} is set"
    return "offline", f"no {_OPENAI_API_KEY} or {env.RAGTRACE_JUDGE_BASE_URL} set"


def default_judge(choice: str | None = None) -> Judge:
    """The judge ``ragtrace.configure()`` uses when given none (see the module docstring), or the one
    ``choice`` names (auto, openai, offline or tiered, as ``RAGTRACE_JUDGE`` would).

    Constructing makes no call and loads no model: the OpenAI judge connects on its first step, the
    offline judge loads MiniLM on its first step. Wrong settings raise ``ConfigurationError``.
    """
    kind, why = judge_choice(choice)
    judge: Judge
    if kind == "openai":
        # Imported here so an offline-only process never imports the openai client.
        from ragtrace.judges.openai import OpenAIJudge

        judge = OpenAIJudge()
    elif kind == "tiered":
        from ragtrace.judges.tiered import TieredJudge

        judge = TieredJudge()
    else:
        from ragtrace.judges.offline import OfflineJudge

        judge = OfflineJudge()
    with _logged_lock:
        first = judge.name not in _logged
        _logged.add(judge.name)
    if first:
        _logger.info("ragtrace scores with the %s judge (%s)", judge.name, why)
    return judge


def as_judge(value: Judge | str | None) -> Judge:
    """The judge ``value`` names, for ``configure(judge=...)`` and ``ScoringSpanProcessor(judge=...)``.

    A judge (an object with ``name``, ``capabilities`` and ``aclose``, as ``Judge`` has) is used as
    given; None is ``default_judge()``; a string takes the values of
    ``RAGTRACE_JUDGE`` in any case ("auto", "openai", "offline", "tiered"). Anything else, a judge class passed
    for an instance included (``judge=OfflineJudge``: it has every method, but cannot score), or a
    metric (it has a ``name`` and ``capabilities`` too), raises ``ConfigurationError`` naming the
    accepted forms.
    """
    if value is None:
        return default_judge()
    if isinstance(value, str):
        choice: str | None = value.strip().lower()
    elif not isinstance(value, type) and all(hasattr(value, a) for a in ("name", "capabilities", "aclose")):
        # Judge-like: what the metrics use of a judge is checked step by step (``capabilities``), so a
        # judge need not implement every step of the protocol to be accepted here; the processor
        # closes every judge at shutdown, so ``aclose`` is required.
        return value
    else:
        choice = None
    if choice not in _CHOICES:
        raise ConfigurationError(
            f"judge={value!r} is not a judge: pass 'auto', 'openai', 'offline' or 'tiered' (the values of "
            f"{env.RAGTRACE_JUDGE}), or a ragtrace.judges.Judge such as OpenAIJudge(model=...) or OfflineJudge()"
        )
    return default_judge(None if choice == "auto" else choice)
