"""``OpenAIJudge``: every judge step answered by any OpenAI-compatible endpoint.

OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp server and LiteLLM all speak ``/v1/chat/completions``
and ``/v1/embeddings``. Each step is ONE chat call (the rating of all chunks, the n questions with
their noncommittal flags, batched verification of all claims against all chunks) and ``embed`` is ONE
embeddings call; per-claim verification (the default on a self-hosted endpoint, for small models) is
one yes/no call per claim, scored by P(yes) from the logprobs. The contract of each step is in
``ragtrace.judges._base``; the transport is in ``_openai_transport``, the reply readers in
``_openai_replies``. What this module adds:

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

import asyncio
import dataclasses
import threading
import weakref
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Literal, TypeVar

import openai

from ragtrace import _settings
from ragtrace import environment_variables as env
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges import _prompts
from ragtrace.judges._base import (
    ALL_CAPABILITIES,
    GEvalRating,
    JudgeError,
    JudgeReply,
    Question,
    Rating,
    Verdict,
)
from ragtrace.judges._openai_replies import (
    _bare_answer_claim,
    _ChatReply,
    _ClaimAnswer,
    _is_finite,
    _read_claim_answer,
    _read_claim_word,
    _sentence_claims,
    _vectors,
    _verdict_word,
    _weighted_score,
)
from ragtrace.judges._openai_transport import (
    INVALID_REPLY,
    ResponseMode,
    _Tally,
    _Transport,
)
from ragtrace.judges._parsing import (
    InvalidReply,
    ReplyParseError,
    align,
    as_bool,
    as_number,
    as_str,
    index_set,
    pick,
    pick_list,
)
from ragtrace.metrics._base import Cost

__all__ = ["DEFAULT_TIMEOUT", "INVALID_REPLY", "ExtractMode", "OpenAIJudge", "ResponseMode", "VerifyMode"]

T = TypeVar("T")

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


class OpenAIJudge(_Transport):
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
    - ``extract``: ``llm`` asks the model to split an answer into atomic claims (one call);
      ``sentences`` takes the answer's sentences as its claims, each prefixed with the question when
      there is one so that it keeps the question's meaning (no call: small models asked to rewrite
      often return the question without its answer). ``auto``: sentences when verifying per claim.
    - ``verify``: ``per_claim`` asks one yes/no question per claim (n calls, sent concurrently; what a
      0.5B-7B model answers well, scored by P(yes) from the logprobs), ``batched`` asks for all claims
      against all chunks in one call (cheaper; for large hosted models). ``auto`` (default): batched
      on api.openai.com, per claim on any other endpoint (a self-hosted llama.cpp, Ollama, vLLM).

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
        if not isinstance(top_logprobs, int) or not 1 <= top_logprobs <= 20:
            raise ConfigurationError(f"top_logprobs={top_logprobs!r} is invalid: give an integer from 1 to 20")
        self._mode: ResponseMode = "json_schema" if response_mode == "auto" else response_mode
        self._auto_downgrade = response_mode == "auto"
        self._parse_retries = parse_retries
        self._retry_base_delay = float(retry_base_delay)
        self._retry_max_delay = float(retry_max_delay)
        self._max_retry_after = float(max_retry_after)
        self._logprobs = logprobs
        self._top_logprobs = top_logprobs
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._closed = False
        if client is not None:
            if base_url is not None or api_key is not None:
                raise ConfigurationError("pass either client=... or base_url/api_key, not both")
            # A copy shares the caller's connection pool; only its retry policy differs.
            self._client = client.with_options(max_retries=0, timeout=self.timeout)
            self._owns_client = False
        else:
            url = base_url if base_url is not None else env.read_str(env.RAGTRACE_JUDGE_BASE_URL)
            key = api_key or env.read_str(env.RAGTRACE_JUDGE_API_KEY) or env.read_str("OPENAI_API_KEY")
            if key is None:
                if url is None:
                    raise ConfigurationError(
                        "OpenAIJudge has no API key: set OPENAI_API_KEY or RAGTRACE_JUDGE_API_KEY, pass api_key=..., "
                        "or point base_url (RAGTRACE_JUDGE_BASE_URL) at a local OpenAI-compatible server"
                    )
                key = _PLACEHOLDER_KEY
            self._client_options: dict[str, Any] = {
                "api_key": key,
                "base_url": url,
                "timeout": self.timeout,
                "max_retries": 0,
            }
            self._client = openai.AsyncOpenAI(**self._client_options)
            self._owns_client = True
        if verify == "auto":
            verify = "batched" if _OPENAI_HOST in str(self._client.base_url) else "per_claim"
        self.verify_mode: Literal["per_claim", "batched"] = verify
        if extract == "auto":
            extract = "sentences" if verify == "per_claim" else "llm"
        self.extract_mode: Literal["llm", "sentences"] = extract
        # One client per event loop, each closed when its loop ends (see _client_here).
        self._loop_clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()
        self._first_client_free = True
        self._loop_clients_lock = threading.Lock()

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
        return self._mode

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={str(self._client.base_url)!r}, mode={self._mode!r})"

    # ----------------------------------------------------------------------------------------------
    # steps
    # ----------------------------------------------------------------------------------------------

    async def extract_claims(self, text: str, *, question: str | None = None) -> JudgeReply[list[str]]:
        """Claims of ``text``; an empty text has none (no call).

        A bare short answer to a question ("1959" to "In what year was she born?") is one claim that
        keeps the question's meaning, "<question> <answer>", made without a call: a small model asked
        to rewrite it may drop the question, and "1959" alone cannot be checked against anything.
        """
        if not text.strip():
            return JudgeReply(value=[])
        bare = _bare_answer_claim(text, question)
        if bare is not None:
            return JudgeReply(value=[bare])
        if self.extract_mode == "sentences":
            return JudgeReply(value=_sentence_claims(text, question))

        def read(obj: Any, _: _ChatReply) -> list[str]:
            claims: list[str] = []
            for item in pick_list(obj, "claims", "statements"):
                claim = as_str(pick(item, "claim", "text", "statement") if isinstance(item, Mapping) else item, "claim")
                if claim not in claims:
                    claims.append(claim)
            return claims

        return await self._ask(_prompts.EXTRACT_CLAIMS, _prompts.render_extract_claims(text, question), read)

    async def verify(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        """``value[claim][chunk]``: one yes/no question per claim (``verify_mode == "per_claim"``, the
        calls sent concurrently) or all claims against all chunks in one call (``"batched"``).

        Per claim, the claim is SUPPORTED (at the chunk the judge names, the only chunk of a
        one-chunk record) when P(yes) >= ``support_threshold`` (0.5 unless set), P(yes) read from
        the logprobs of the answer token normalised over yes and no, or the written answer when the
        endpoint returns no logprobs; else CONTRADICTED there when the judge says the context
        contradicts it, else NEITHER.
        Batched, a chunk the judge lists both as supporting and contradicting a claim counts as
        neither: a self-contradictory verdict is not evidence either way.

        A reply naming a claim or chunk the request does not have, or the wrong number of results,
        fails with ``invalid_reply``.
        """
        if not claims:
            return JudgeReply(value=[])
        if not chunks:
            return JudgeReply(value=[[] for _ in claims])
        if self.verify_mode == "per_claim":
            reply = await self._claim_answers(claims, chunks)
            verdicts = [answer.verdicts(len(chunks), self.support_threshold) for answer in reply.value]
            return JudgeReply(verdicts, reply.cost)
        return await self._verify_batched(claims, chunks)

    async def support(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Beyond the protocol, as ``OfflineJudge.support``: ``value[claim][chunk]``, the probability that
        the chunks support the claim, from one yes/no question per claim (whatever ``verify_mode``).

        P(yes) normalised over yes and no from the answer token's logprobs; 1.0 or 0.0 from the written
        answer when the endpoint returns no logprobs. With several chunks the claim is asked about
        all of them at once: its probability stands at the chunk the judge names, and the other
        chunks carry 0.0 (not asked about separately), so the best chunk's value is the claim's.
        """
        if not claims:
            return JudgeReply(value=[])
        if not chunks:
            return JudgeReply(value=[[] for _ in claims])
        reply = await self._claim_answers(claims, chunks)
        return JudgeReply([answer.probabilities(len(chunks)) for answer in reply.value], reply.cost)

    async def _claim_answers(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[_ClaimAnswer]]:
        """One VERIFY_CLAIM call per claim, concurrently; the step fails when any of them fails."""
        count = len(chunks)
        schema = _prompts.verify_claim_schema(count)
        prompt = _prompts.VERIFY_CLAIM_WORD if count == 1 else _prompts.VERIFY_CLAIM

        def read(obj: Any, reply: _ChatReply) -> _ClaimAnswer:
            if prompt.word:
                return _read_claim_word(obj, reply)
            return _read_claim_answer(obj, reply, count)

        async def one(claim: str) -> JudgeReply[_ClaimAnswer]:
            user = _prompts.render_verify_claim(claim, chunks)
            return await self._ask(prompt, user, read, logprobs=True, schema=schema)

        outcomes = await asyncio.gather(*(one(c) for c in claims), return_exceptions=True)
        cost = Cost()
        answers: list[_ClaimAnswer] = []
        failure: BaseException | None = None
        for outcome in outcomes:
            if isinstance(outcome, JudgeError):
                cost = cost + outcome.cost
                failure = failure or outcome
            elif isinstance(outcome, BaseException):
                failure = failure or outcome
            else:
                cost = cost + outcome.cost
                answers.append(outcome.value)
        # The calls ran concurrently: the step took as long as the slowest, not their sum.
        seconds = max((o.cost.seconds for o in outcomes if isinstance(o, (JudgeReply, JudgeError))), default=0.0)
        cost = dataclasses.replace(cost, seconds=seconds)
        if isinstance(failure, JudgeError):
            raise JudgeError(str(failure), error_type=failure.error_type, cost=cost) from failure
        if failure is not None:
            raise failure
        return JudgeReply(answers, cost)

    async def _verify_batched(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        count = len(chunks)

        def read_item(item: Any) -> list[Verdict]:
            if not isinstance(item, Mapping):
                raise ReplyParseError(f"verify result is not an object: {item!r}")
            if "verdicts" in item:
                # The one other shape read as meant: a verdict word per chunk, in chunk order.
                verdicts = item["verdicts"]
                if not isinstance(verdicts, list):
                    raise ReplyParseError(f"verify result needs a list of verdicts: {item!r}")
                if len(verdicts) != count:
                    raise InvalidReply(f"verify result has {len(verdicts)} verdicts for {count} chunks")
                return [_verdict_word(v) for v in verdicts]
            # Both lists are required: a chunk missing from a list the reply does not hold is unread,
            # and reading it as "neither" would report the claim as a hallucination.
            supported = index_set(pick(item, "supported_by", "supported"), count, "supported_by")
            contradicted = index_set(pick(item, "contradicted_by", "contradicted"), count, "contradicted_by")
            row: list[Verdict] = []
            for number in range(1, count + 1):
                if number in supported and number not in contradicted:
                    row.append(Verdict.SUPPORTED)
                elif number in contradicted and number not in supported:
                    row.append(Verdict.CONTRADICTED)
                else:
                    row.append(Verdict.NEITHER)
            return row

        def read(obj: Any, _: _ChatReply) -> list[list[Verdict]]:
            items = pick_list(obj, "results", "claims", "verdicts")
            return align(items, len(claims), key="claim", read=read_item, what="claim")

        schema = _prompts.verify_schema(len(claims), count)
        return await self._ask(_prompts.VERIFY, _prompts.render_verify(claims, chunks), read, schema=schema)

    async def classify_claims(self, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
        """For every claim, whether the reference supports it."""
        if not claims:
            return JudgeReply(value=[])

        def read(obj: Any, _: _ChatReply) -> list[bool]:
            items = pick_list(obj, "results", "claims")
            return align(
                items,
                len(claims),
                key="claim",
                read=lambda item: as_bool(pick(item, "correct", "supported", "verdict"), "correct"),
                what="claim",
            )

        user = _prompts.render_classify_claims(claims, reference)
        return await self._ask(_prompts.CLASSIFY_CLAIMS, user, read, schema=_prompts.classify_schema(len(claims)))

    async def rate_statements(self, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
        """For every statement, whether it is relevant to the query."""
        if not statements:
            return JudgeReply(value=[])

        def read(obj: Any, _: _ChatReply) -> list[bool]:
            items = pick_list(obj, "results", "statements")
            return align(
                items,
                len(statements),
                key="statement",
                read=lambda item: as_bool(pick(item, "relevant", "verdict"), "relevant"),
                what="statement",
            )

        user = _prompts.render_rate_statements(query, statements)
        return await self._ask(
            _prompts.RATE_STATEMENTS, user, read, schema=_prompts.rate_statements_schema(len(statements))
        )

    async def generate_questions(self, answer: str, n: int) -> JudgeReply[list[Question]]:
        """Up to ``n`` questions with noncommittal flags, in one call (at least one, or the step fails)."""
        if n < 1:
            raise ValueError(f"n={n}: ask for at least one question")

        def read(obj: Any, _: _ChatReply) -> list[Question]:
            questions: list[Question] = []
            for item in pick_list(obj, "questions"):
                if not isinstance(item, Mapping):
                    raise ReplyParseError(f"question without its noncommittal flag: {item!r}")
                questions.append(
                    Question(
                        text=as_str(pick(item, "question", "text"), "question"),
                        noncommittal=as_bool(pick(item, "noncommittal", "committal_flag"), "noncommittal"),
                    )
                )
            if not questions:
                raise ReplyParseError("reply has no questions")
            return questions[:n]

        return await self._ask(_prompts.GENERATE_QUESTIONS, _prompts.render_generate_questions(answer, n), read)

    async def detect_noncommittal(self, answer: str) -> JudgeReply[bool]:
        """Whether the answer is evasive or noncommittal."""

        def read(obj: Any, _: _ChatReply) -> bool:
            return as_bool(pick(obj, "noncommittal"), "noncommittal")

        return await self._ask(_prompts.DETECT_NONCOMMITTAL, _prompts.render_detect_noncommittal(answer), read)

    async def embed(self, texts: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Every text embedded in one embeddings call, in input order.

        A reply without one vector of finite numbers per text is asked again ``parse_retries`` times,
        then fails with ``unparseable_reply``.
        """
        if not texts:
            return JudgeReply(value=[])
        tally = _Tally()
        # Endpoints reject empty strings; a space embeds as "nothing" just as well.
        inputs = [text if text.strip() else " " for text in texts]

        async def send() -> Any:
            client = await self._client_here()
            return await client.embeddings.create(
                model=self.embedding_model, input=inputs, encoding_format="float", timeout=self.timeout
            )

        async def attempt() -> list[list[float]]:
            response = await self._call(send, tally, "embedding")
            tally.add_usage(getattr(response, "usage", None))
            return _vectors(response, len(texts))

        return await self._until_readable("embed", tally, attempt)

    async def rate_chunks(self, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
        """Every chunk's relevance in [0, 1], in one call."""
        if not chunks:
            return JudgeReply(value=[])

        def read(obj: Any, _: _ChatReply) -> list[float]:
            items = pick_list(obj, "ratings", "chunks", "results")
            return align(
                items,
                len(chunks),
                key="chunk",
                read=lambda item: as_number(pick(item, "relevance", "score", "rating"), "relevance", low=0.0, high=1.0),
                what="chunk",
            )

        user = _prompts.render_rate_chunks(query, chunks)
        return await self._ask(_prompts.RATE_CHUNKS, user, read, schema=_prompts.rate_chunks_schema(len(chunks)))

    async def rate_answer(self, query: str, answer: str) -> JudgeReply[Rating]:
        """How well the answer addresses the query, in [0, 1], with the judge's explanation."""

        def read(obj: Any, _: _ChatReply) -> Rating:
            value = as_number(pick(obj, "score", "rating"), "score", low=0.0, high=1.0)
            explanation = obj.get("explanation", "") if isinstance(obj, Mapping) else ""
            return Rating(value=value, explanation=str(explanation or ""))

        return await self._ask(_prompts.RATE_ANSWER, _prompts.render_rate_answer(query, answer), read)

    async def geval_steps(self, criteria: str) -> JudgeReply[list[str]]:
        """Evaluation steps for the criteria (the caller caches them)."""

        def read(obj: Any, _: _ChatReply) -> list[str]:
            steps = [as_str(s, "step") for s in pick_list(obj, "steps", "evaluation_steps")]
            if not steps:
                raise ReplyParseError("reply has no steps")
            return steps

        return await self._ask(_prompts.GEVAL_STEPS, _prompts.render_geval_steps(criteria), read)

    async def geval_score(
        self,
        criteria: str,
        steps: Sequence[str],
        params: Mapping[str, str],
        score_range: tuple[int, int],
    ) -> JudgeReply[GEvalRating]:
        """The score on ``score_range``, probability-weighted over the score token when logprobs come back."""
        low, high = score_range
        if low >= high:
            raise ValueError(f"score_range={score_range}: the low end must be below the high end")

        def read(obj: Any, reply: _ChatReply) -> GEvalRating:
            written = as_number(pick(obj, "score", "rating"), "score", low=low, high=high)
            explanation = obj.get("explanation", "") if isinstance(obj, Mapping) else ""
            weighted = _weighted_score(reply, low, high)
            if weighted is None:
                return GEvalRating(score=float(round(written)), explanation=str(explanation or ""), weighted=False)
            return GEvalRating(score=weighted, explanation=str(explanation or ""), weighted=True)

        user = _prompts.render_geval_score(criteria, steps, params, score_range)
        return await self._ask(_prompts.GEVAL_SCORE, user, read, logprobs=True)

    async def aclose(self) -> None:
        """Close the client this judge created (a client passed in stays open). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._owns_client:
            return
        here = asyncio.get_running_loop()
        entries = list(self._loop_clients.items())
        self._loop_clients.clear()
        if self._first_client_free:  # never handed to a loop, so no closer owns it
            await self._client.close()
        for loop, (_, closer) in entries:
            if loop is here:
                await closer.aclose()
            elif loop.is_running():
                # Its connections belong to that loop: close them there.
                asyncio.run_coroutine_threadsafe(closer.aclose(), loop)
            # Else that loop is gone (closed without shutdown_asyncgens, a forked parent's): its
            # connections cannot be closed from here and are dropped with the client.
