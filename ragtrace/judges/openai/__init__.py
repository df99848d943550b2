"""``OpenAIJudge``: every judge step answered by any OpenAI-compatible endpoint.

OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp server and LiteLLM all speak ``/v1/chat/completions``
and ``/v1/embeddings``. Each step is ONE chat call (the rating of all chunks, the n questions with
their noncommittal flags, batched verification of all claims against all chunks) and ``embed`` is ONE
embeddings call; per-claim verification (the default on a self-hosted endpoint, for small models) is
one yes/no call per claim, scored by P(yes) from the logprobs. The contract of each step is in
``ragtrace.judges._base``. This module is the judge's configuration: ``OpenAIJudge`` composes a
``transport.Transport`` (clients, response formats), which holds a ``retry.Retrier`` (the retry loop),
and answers each step with a function of that transport in ``steps`` or ``verify`` (claim
verification); the reply readers are in ``replies``. What the judge adds:

- Structured output. Calls ask for a strict JSON schema; an endpoint that rejects it (400/422 naming
  the response format, as older vLLM and llama.cpp do) is asked again in JSON mode, then with no
  response format at all and the reply read tolerantly. The downgrade is remembered per judge, so
  later calls do not pay for it.
- Retries are ours, not the client's (the client runs with ``max_retries=0``), so that every call is
  counted: exponential backoff with jitter on 429, 5xx, 408, timeouts and connection errors, waiting
  what ``Retry-After`` asks. A reply that cannot be read is asked again ``parse_retries`` times, then
  the step fails with ``error_type="unparseable_reply"``: a verdict is never guessed.
- Every call runs with OpenTelemetry instrumentation suppressed, so an instrumented OpenAI or HTTP
  client in the user's app makes no spans for the judge.
- ``Cost`` counts every call made (failed attempts too), the tokens the endpoint reported and the
  step's wall time; a failed step carries what it spent on its ``JudgeError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import openai

from ragtrace import _settings
from ragtrace import environment_variables as env
from ragtrace._secrets import strip_url
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges._base import ALL_CAPABILITIES, GEvalRating, JudgeReply, Question, Rating, Verdict
from ragtrace.judges._capabilities import serves_every_step
from ragtrace.judges.openai import steps as _steps
from ragtrace.judges.openai import verify as _verify
from ragtrace.judges.openai.http import split_credentials
from ragtrace.judges.openai.replies import _is_finite
from ragtrace.judges.openai.retry import INVALID_REPLY, RetryPolicy
from ragtrace.judges.openai.transport import Endpoint, ResponseMode, Transport

__all__ = ["DEFAULT_TIMEOUT", "INVALID_REPLY", "ExtractMode", "OpenAIJudge", "ResponseMode", "VerifyMode"]

_MODES: tuple[ResponseMode, ...] = ("json_schema", "json_object", "text")
_DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT = 180.0
"""Seconds per call when neither ``timeout=`` nor ``RAGTRACE_JUDGE_TIMEOUT`` is given: long enough for
a small model on a CPU (first calls of a 0.5B-1.5B model on 2 cores took 43-133 s). The app never
waits for it: a span held past its deadline is exported unscored and its scores follow on a carrier."""
_TIMEOUT = _settings.seconds("timeout", env.RAGTRACE_JUDGE_TIMEOUT, default=DEFAULT_TIMEOUT)
_MAX_RETRIES = _settings.whole_number("max_retries", env.RAGTRACE_JUDGE_MAX_RETRIES, default=3, minimum=0)
_MAX_CONCURRENCY = _settings.whole_number("max_concurrency", env.RAGTRACE_JUDGE_MAX_CONCURRENCY, default=16, minimum=1)
_SUPPORT_THRESHOLD = _settings.rate("support_threshold", env.RAGTRACE_JUDGE_SUPPORT_THRESHOLD, default=0.5)

VerifyMode = Literal["auto", "per_claim", "batched"]
"""How ``verify`` asks: one yes/no question per claim (small models), or all claims in one call."""
ExtractMode = Literal["auto", "llm", "sentences"]
"""How ``extract_claims`` splits an answer: by the model (one call), or into its sentences (no call)."""
_OPENAI_HOST = "api.openai.com"
_DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
_PLACEHOLDER_KEY = "not-needed"


@serves_every_step
class OpenAIJudge:
    """A judge served by an OpenAI-compatible endpoint; see the module docstring for the behaviour.

    Arguments win over ``RAGTRACE_JUDGE_*`` variables, which win over the defaults:

    - ``model`` (``RAGTRACE_JUDGE_MODEL``, default ``gpt-4o-mini``) and ``embedding_model``
      (``RAGTRACE_JUDGE_EMBEDDING_MODEL``, default ``text-embedding-3-small``).
    - ``client``: an ``openai.AsyncOpenAI`` you configured (Azure, proxies, ...). The judge uses a copy
      with the client's own retries off, and does not close it. Otherwise the judge creates one from
      ``base_url`` (``RAGTRACE_JUDGE_BASE_URL``) and ``api_key`` (``RAGTRACE_JUDGE_API_KEY``, then
      ``OPENAI_API_KEY``; a local endpoint given by ``base_url`` needs none) and ``aclose`` closes it.
    - ``timeout`` seconds per call (``RAGTRACE_JUDGE_TIMEOUT``, ``DEFAULT_TIMEOUT`` = 180, sized for a
      small model on a CPU; the app never waits for it), ``max_retries`` per call
      (``RAGTRACE_JUDGE_MAX_RETRIES``, 3), ``max_concurrency`` calls in flight
      (``RAGTRACE_JUDGE_MAX_CONCURRENCY``, 16).
    - ``response_mode``: ``auto`` starts with a JSON schema and downgrades as needed; or force
      ``json_schema``, ``json_object`` or ``text``.
    - ``parse_retries``: extra calls for a reply that could not be read (default 1).
    - ``retry_base_delay`` / ``retry_max_delay``: backoff bounds in seconds; ``max_retry_after``: a
      ``Retry-After`` longer than this fails the call at once rather than stalling the scorer.
    - ``logprobs``: ask for token logprobs in G-Eval scoring and per-claim verification
      (``top_logprobs`` alternatives).
    - ``extract``: ``llm`` asks the model to split an answer into atomic claims (one call; an answer
      to a question that is one short sentence of one clause is its own claim, joined to the question,
      without a call);
      ``sentences`` takes the answer's sentences as its claims, each prefixed with the question when
      there is one so that it keeps the question's meaning (no call: small models asked to rewrite
      often return the question without its answer). ``auto``: sentences when verifying per claim.
    - ``verify``: ``per_claim`` asks one yes/no question per claim (n calls, sent concurrently; what a
      0.5B-7B model answers well, scored by P(yes) from the logprobs), ``batched`` asks for all claims
      against all chunks in one call (cheaper; for large hosted models). ``auto`` (default): batched
      on api.openai.com, per claim on any other endpoint (a self-hosted llama.cpp, Ollama, vLLM).
    - ``rate_chunks_in_verify``: True: ``verify`` asked with the record's question (as a suite that both
      verifies and rates chunks asks it) also rates the chunks' relevance to it in the same call, so the
      production suite's context_relevance costs no call of its own. False: context_relevance asks
      ``rate_chunks`` in a call of its own, and verification prompts never show the question. None
      (default): True when verifying batched; per claim, True for a record of several chunks, whose
      question is JSON naming its chunk either way, and False for one chunk, whose one-word yes/no would
      become JSON (a 0.5B model's P(yes) separated right from hallucinated HaluEval answers at AUROC 0.715
      asked with the ratings against 0.779 asked as one word on one chunk, and 0.610 against 0.570 on
      several: docs/judges.md). Ratings that cannot be read leave the claim's answer standing and the
      chunks to ``rate_chunks``.

    Wrong settings raise ``ConfigurationError`` naming the fix.
    """

    capabilities: frozenset[str] = ALL_CAPABILITIES

    def __init__(
        self,
        model: str | None = None,
        embedding_model: str | None = None,
        *,
        client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        max_concurrency: int | None = None,
        response_mode: Literal["auto", "json_schema", "json_object", "text"] = "auto",
        parse_retries: int = 1,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 20.0,
        max_retry_after: float = 60.0,
        logprobs: bool = True,
        top_logprobs: int = 5,
        verify: VerifyMode = "auto",
        extract: ExtractMode = "auto",
        support_threshold: float | None = None,
        rate_chunks_in_verify: bool | None = None,
    ) -> None:
        self.model = self._model(model, env.RAGTRACE_JUDGE_MODEL, _DEFAULT_MODEL, "model")
        self.embedding_model = self._model(
            embedding_model, env.RAGTRACE_JUDGE_EMBEDDING_MODEL, _DEFAULT_EMBEDDING_MODEL, "embedding_model"
        )
        self.name = f"openai:{self.model}"
        self.timeout = _TIMEOUT.resolve(timeout)
        self.max_retries = _MAX_RETRIES.resolve(max_retries)
        self.max_concurrency = _MAX_CONCURRENCY.resolve(max_concurrency)
        self.support_threshold = _SUPPORT_THRESHOLD.resolve(support_threshold)
        if response_mode != "auto" and response_mode not in _MODES:
            raise ConfigurationError(
                f"response_mode={response_mode!r} is unknown: use 'auto', 'json_schema', 'json_object' or 'text'"
            )
        delays = (
            ("retry_base_delay", retry_base_delay),
            ("retry_max_delay", retry_max_delay),
            ("max_retry_after", max_retry_after),
        )
        for label, value in delays:
            if not (_is_finite(value) and value >= 0):
                raise ConfigurationError(f"{label}={value!r} is invalid: give a number of seconds >= 0")
        if not isinstance(parse_retries, int) or parse_retries < 0:
            raise ConfigurationError(f"parse_retries={parse_retries!r} is invalid: give an integer >= 0")
        if extract not in ("auto", "llm", "sentences"):
            raise ConfigurationError(f"extract={extract!r} is unknown: use 'auto', 'llm' or 'sentences'")
        if verify not in ("auto", "per_claim", "batched"):
            raise ConfigurationError(f"verify={verify!r} is unknown: use 'auto', 'per_claim' or 'batched'")
        if rate_chunks_in_verify is not None and not isinstance(rate_chunks_in_verify, bool):
            raise ConfigurationError(
                f"rate_chunks_in_verify={rate_chunks_in_verify!r} is invalid: give True, False or None (auto)"
            )
        if not isinstance(top_logprobs, int) or not 1 <= top_logprobs <= 20:
            raise ConfigurationError(f"top_logprobs={top_logprobs!r} is invalid: give an integer from 1 to 20")
        policy = RetryPolicy(
            timeout=self.timeout,
            max_retries=self.max_retries,
            parse_retries=parse_retries,
            base_delay=float(retry_base_delay),
            max_delay=float(retry_max_delay),
            max_retry_after=float(max_retry_after),
        )
        endpoint: openai.AsyncOpenAI | Endpoint
        if client is not None:
            if base_url is not None or api_key is not None:
                raise ConfigurationError("pass either client=... or base_url/api_key, not both")
            endpoint = client
        else:
            url = base_url if base_url is not None else env.read_str(env.RAGTRACE_JUDGE_BASE_URL)
            given_url = url
            # Credentials in the URL become the HTTP client's Basic auth (what the HTTP package made of
            # them): the URL it logs on every request, and every message quoting it, has none.
            url, credentials = split_credentials(url)
            key = api_key or env.read_str(env.RAGTRACE_JUDGE_API_KEY) or env.read_str("OPENAI_API_KEY")
            if key is None:
                if given_url is None:
                    raise ConfigurationError(
                        "OpenAIJudge has no API key: set OPENAI_API_KEY or RAGTRACE_JUDGE_API_KEY, pass api_key=..., "
                        "or point base_url (RAGTRACE_JUDGE_BASE_URL) at a local OpenAI-compatible server"
                    )
                key = _PLACEHOLDER_KEY
            endpoint = Endpoint(base_url=url, api_key=key, credentials=credentials)
        self._transport = Transport(
            endpoint,
            name=self.name,
            model=self.model,
            policy=policy,
            max_concurrency=self.max_concurrency,
            mode="json_schema" if response_mode == "auto" else response_mode,
            auto_downgrade=response_mode == "auto",
            logprobs=logprobs,
            top_logprobs=top_logprobs,
        )
        if verify == "auto":
            verify = "batched" if _OPENAI_HOST in str(self._transport.base_url) else "per_claim"
        self.verify_mode: Literal["per_claim", "batched"] = verify
        self.rates_chunks_in_verify = True if rate_chunks_in_verify is None else rate_chunks_in_verify
        """Whether ``verify(..., question=...)`` may rate the chunks in the same call (``JudgeReply.relevance``);
        ``rates_chunks_in_verify_for`` says it for a number of chunks."""
        self._rates_one_chunk_in_verify = verify == "batched" or rate_chunks_in_verify is True
        if extract == "auto":
            extract = "sentences" if verify == "per_claim" else "llm"
        self.extract_mode: Literal["llm", "sentences"] = extract

    # ----------------------------------------------------------------------------------------------
    # configuration
    # ----------------------------------------------------------------------------------------------

    @staticmethod
    def _model(value: str | None, variable: str, default: str, label: str) -> str:
        chosen = value if value is not None else env.read_str(variable, default)
        if not isinstance(chosen, str) or not chosen.strip():
            raise ConfigurationError(f"{label} is empty: pass {label}='...' or set {variable}")
        return chosen.strip()

    @property
    def response_mode(self) -> ResponseMode:
        """The response format currently used (after any downgrade)."""
        return self._transport.mode

    def __repr__(self) -> str:
        base_url = strip_url(self._transport.base_url)
        return f"OpenAIJudge(model={self.model!r}, base_url={base_url!r}, mode={self._transport.mode!r})"

    async def aclose(self) -> None:
        """Close the client this judge created (a client passed in stays open). Idempotent."""
        await self._transport.aclose()

    # ----------------------------------------------------------------------------------------------
    # the steps (the ``Judge`` protocol's; each one's contract with this endpoint is on its function)
    # ----------------------------------------------------------------------------------------------

    async def extract_claims(self, text: str, *, question: str | None = None) -> JudgeReply[list[str]]:
        """Claims of ``text`` (``steps.extract_claims``: by the model, or its sentences, per ``extract_mode``)."""
        return await _steps.extract_claims(self._transport, text, question=question, mode=self.extract_mode)

    async def verify(
        self, claims: Sequence[str], chunks: Sequence[str], *, question: str | None = None
    ) -> JudgeReply[list[list[Verdict]]]:
        """``value[claim][chunk]``, asked per claim or batched per ``verify_mode`` (``verify.verify``); with
        ``question``, when ``rates_chunks_in_verify_for`` the chunks, the same call rates them
        (``JudgeReply.relevance``)."""
        return await _verify.verify(
            self._transport,
            claims,
            chunks,
            mode=self.verify_mode,
            support_threshold=self.support_threshold,
            question=question if self.rates_chunks_in_verify_for(len(chunks)) else None,
        )

    def rates_chunks_in_verify_for(self, n_chunks: int) -> bool:
        """Whether ``verify`` of ``n_chunks`` chunks asked with a question rates them in the same call (see
        ``rate_chunks_in_verify``; by default per claim one chunk keeps its one-word question and is rated by
        ``rate_chunks``). A suite asks this before it waits on verification for the ratings."""
        return self.rates_chunks_in_verify and (n_chunks > 1 or self._rates_one_chunk_in_verify)

    async def support(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Beyond the protocol, as ``OfflineJudge.support``: ``value[claim][chunk]``, the probability that the
        chunks support the claim, one yes/no question per claim (``verify.support``)."""
        return await _verify.support(self._transport, claims, chunks)

    async def classify_claims(self, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
        """For every claim, whether the reference supports it (``steps.classify_claims``)."""
        return await _steps.classify_claims(self._transport, claims, reference)

    async def rate_statements(self, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
        """For every statement, whether it is relevant to the query (``steps.rate_statements``)."""
        return await _steps.rate_statements(self._transport, query, statements)

    async def generate_questions(self, answer: str, n: int) -> JudgeReply[list[Question]]:
        """Up to ``n`` questions with noncommittal flags, in one call (``steps.generate_questions``)."""
        return await _steps.generate_questions(self._transport, answer, n)

    async def detect_noncommittal(self, answer: str) -> JudgeReply[bool]:
        """Whether the answer is evasive or noncommittal (``steps.detect_noncommittal``)."""
        return await _steps.detect_noncommittal(self._transport, answer)

    async def embed(self, texts: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Every text embedded by ``embedding_model`` in one call, in input order (``steps.embed``)."""
        return await _steps.embed(self._transport, texts, model=self.embedding_model)

    async def rate_chunks(self, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
        """Every chunk's relevance in [0, 1], in one call (``steps.rate_chunks``)."""
        return await _steps.rate_chunks(self._transport, query, chunks)

    async def rate_answer(self, query: str, answer: str) -> JudgeReply[Rating]:
        """How well the answer addresses the query, in [0, 1], explained (``steps.rate_answer``)."""
        return await _steps.rate_answer(self._transport, query, answer)

    async def geval_steps(self, criteria: str) -> JudgeReply[list[str]]:
        """Evaluation steps for the criteria; the caller caches them (``steps.geval_steps``)."""
        return await _steps.geval_steps(self._transport, criteria)

    async def geval_score(
        self,
        criteria: str,
        steps: Sequence[str],
        params: Mapping[str, str],
        score_range: tuple[int, int],
    ) -> JudgeReply[GEvalRating]:
        """The score on ``score_range``, weighted over the score token's logprobs (``steps.geval_score``)."""
        return await _steps.geval_score(self._transport, criteria, steps, params, score_range)
