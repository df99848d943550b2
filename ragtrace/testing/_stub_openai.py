"""``StubOpenAIServer``: a scriptable OpenAI-compatible HTTP server on 127.0.0.1, for tests, demos and benchmarks.

It serves ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` over real HTTP from a thread
(stdlib ``ThreadingHTTPServer``; no dependency), logs every request (path, body, start and end
times, status, the judge step it recognised), and tracks the most requests in flight at once.

By default it answers every ``OpenAIJudge`` step deterministically and plausibly from the request
text (claims are the answer's sentences, verdicts and ratings come from word overlap, embeddings are
a hashed bag of words), so the same server drives tests, ``ragtrace eval`` demos and the cost
benchmark. A prompt it does not know (another library's) gets a generic reply shaped by the JSON
schema found in the request (``response_format``, a tool's parameters, or a schema in the prompt).

Behaviours are scriptable: ``mode`` makes the server reject JSON schemas (``json_object``, like
older vLLM / llama.cpp) or any response format (``text``); ``reply_style`` wraps replies in prose or
breaks them; ``latency`` delays every reply; ``script(StubReply(...), ...)`` queues one-shot replies
(429 with ``Retry-After``, 500, a slow reply, raw content) served to the next requests in order;
``responder`` replaces the default content for chosen steps.

Token usage is counted with one crude tokenizer (words and punctuation marks) over everything the
model would read: messages, the response-format schema and tool definitions. It is not any real
model's count, but it is the same ruler for every client measured against the server.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType
from typing import Any, Literal

from ragtrace.judges import _base
from ragtrace.judges._prompts import SCHEMA_PREFIX, STEP_MARKER

Mode = Literal["json_schema", "json_object", "text"]
ReplyStyle = Literal["json", "prose", "malformed"]
Responder = Callable[[str, Mapping[str, Any]], Any]
"""``responder(step, request_body)``: the reply content for a step (a JSON-able value or a string),
or ``None`` to fall back to the default answer."""

_EMPTY: Mapping[str, str] = MappingProxyType({})
_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_STEP = re.compile(re.escape(STEP_MARKER) + r"\s*(\w+)")
_NONCOMMITTAL = (
    "i don't know",
    "i do not know",
    "not sure",
    "cannot answer",
    "can't answer",
    "no information",
    "unable to",
    "i cannot say",
)
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the of in on at to for and or but is are was were be been by with from as that this it its which who "
        "what when where how why did does do has have had not no into than then there their they he she his her "
        "also about",
    )
)
EMBEDDING_DIMENSIONS = 64
"""Length of the stub's embedding vectors."""


def count_tokens(text: str) -> int:
    """The stub's token count: words and punctuation marks."""
    return len(_TOKEN.findall(text))


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without stop words (the stub's notion of meaning)."""
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOPWORDS}


def overlap(part: str, whole: str) -> float:
    """Share of ``part``'s content words found in ``whole`` (0 when ``part`` has none)."""
    words = content_words(part)
    if not words:
        return 0.0
    return len(words & content_words(whole)) / len(words)


def is_noncommittal(text: str) -> bool:
    """True for an evasive answer ("I don't know", ...), by phrase."""
    lowered = text.lower().replace("’", "'")
    return not text.strip() or any(phrase in lowered for phrase in _NONCOMMITTAL)


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after . ! ?), stripped, non-empty."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def embed_text(text: str) -> list[float]:
    """A deterministic unit vector: a hashed bag of content words (stable across processes)."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in content_words(text) or {text.strip().lower() or "empty"}:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % EMBEDDING_DIMENSIONS
        sign = 1.0 if digest[4] & 1 else -1.0
        vector[slot] += sign
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        # Words whose signed slots cancel out: a zero vector has no cosine, so fall back to one slot.
        digest = hashlib.blake2b(text.encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "little") % EMBEDDING_DIMENSIONS] = 1.0
        norm = 1.0
    return [v / norm for v in vector]


@dataclass(frozen=True, slots=True)
class StubReply:
    """A one-shot scripted reply: status, headers, an optional raw chat content or whole body, a delay."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    content: str | None = None
    body: Any = None
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request as the server saw it. Times are ``time.monotonic()`` seconds."""

    path: str
    body: Mapping[str, Any]
    started: float
    finished: float
    status: int
    step: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    schema_errors: tuple[str, ...] = ()
    """Where the reply broke the request's ``json_schema`` (enum, type, required, extra field); empty
    when it conformed or the request had no schema. A constrained server never breaks it."""

    @property
    def is_chat(self) -> bool:
        return self.path.endswith("/chat/completions")

    @property
    def is_embeddings(self) -> bool:
        return self.path.endswith("/embeddings")


class StubOpenAIServer:
    """A real OpenAI-compatible HTTP server on 127.0.0.1; see the module docstring.

    Use as a context manager (or ``start()`` / ``stop()``); ``base_url`` is the ``.../v1`` URL to give
    a client. All attributes may be changed while it runs; the request log is thread-safe.
    """

    def __init__(
        self,
        *,
        mode: Mode = "json_schema",
        reply_style: ReplyStyle = "json",
        latency: float = 0.0,
        logprobs: bool = True,
        responder: Responder | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.mode: Mode = mode
        self.reply_style: ReplyStyle = reply_style
        self.latency = latency
        self.logprobs = logprobs
        self.responder = responder
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._log: list[LoggedRequest] = []
        self._script: collections.deque[StubReply] = collections.deque()
        self._in_flight = 0
        self._max_in_flight = 0
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> StubOpenAIServer:
        """Bind and serve from a daemon thread. Returns self."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self._host, self._port), _make_handler(self))
        self._server = server
        # A short poll interval keeps stop() quick (shutdown waits for the loop to notice).
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.02,), name="ragtrace-stub-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any delayed reply, close the socket and join the thread. Idempotent."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> StubOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stub server is not running: call start() or use it as a context manager")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:<port>/v1``."""
        return self.url + "/v1"

    # -- scripting and the log ---------------------------------------------------------------------

    def script(self, *replies: StubReply) -> None:
        """Queue one-shot replies; each of the next requests takes the next one, then defaults resume."""
        with self._lock:
            self._script.extend(replies)

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every finished request, in the order they finished."""
        with self._lock:
            return list(self._log)

    @property
    def chat_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.is_chat]

    @property
    def embedding_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.is_embeddings]

    @property
    def max_in_flight(self) -> int:
        """The most requests the server was handling at once since the last ``reset()``."""
        with self._lock:
            return self._max_in_flight

    def reset(self) -> None:
        """Clear the log, the script and the in-flight peak."""
        with self._lock:
            self._log.clear()
            self._script.clear()
            self._max_in_flight = self._in_flight

    def usage(self, requests: Sequence[LoggedRequest] | None = None) -> tuple[int, int]:
        """Summed (prompt, completion) tokens the server reported for ``requests`` (default: all)."""
        chosen = self.requests if requests is None else requests
        prompt = completion = 0
        for request in chosen:
            prompt += request.prompt_tokens
            completion += request.completion_tokens
        return prompt, completion

    # -- handling (called from handler threads) ----------------------------------------------------

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self, entry: LoggedRequest) -> None:
        with self._lock:
            self._in_flight -= 1
            self._log.append(entry)

    def _next_script(self) -> StubReply | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def handle(self, path: str, body: Mapping[str, Any]) -> tuple[int, dict[str, str], Any, str | None]:
        """Decide the reply to one request: (status, headers, JSON body, recognised step)."""
        step = _recognise_step(body) if path.endswith("/chat/completions") else None
        scripted = self._next_script()
        self._wait(self.latency + (scripted.delay if scripted else 0.0))
        headers = dict(scripted.headers) if scripted else {}
        if scripted is not None and (scripted.status != 200 or scripted.body is not None):
            reply = scripted.body if scripted.body is not None else _error(scripted.status, "scripted failure")
            return scripted.status, headers, reply, step
        if path.endswith("/embeddings"):
            return 200, headers, self._embeddings(body), None
        if not path.endswith("/chat/completions"):
            return 404, headers, _error(404, f"no route {path}"), None
        rejected = self._rejection(body)
        if rejected is not None:
            return 400, headers, rejected, step
        return 200, headers, self._chat(body, step, scripted.content if scripted else None), step

    def _rejection(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        kind = (body.get("response_format") or {}).get("type")
        if kind is None or kind == "text":
            return None
        if self.mode == "text" or (self.mode == "json_object" and kind == "json_schema"):
            return _error(400, f"response_format of type '{kind}' is not supported by this server")
        return None

    def _embeddings(self, body: Mapping[str, Any]) -> dict[str, Any]:
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
        tokens = sum(count_tokens(t) for t in texts)
        return {
            "object": "list",
            "model": body.get("model", "stub-embedding"),
            "data": [{"object": "embedding", "index": i, "embedding": embed_text(t)} for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _chat(self, body: Mapping[str, Any], step: str | None, scripted_content: str | None) -> dict[str, Any]:
        messages = body.get("messages") or []
        tools = body.get("tools") or []
        prompt_text = "".join(_message_text(m) for m in messages)
        prompt_tokens = count_tokens(prompt_text)
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            prompt_tokens += count_tokens(json.dumps(response_format.get("json_schema", {})))
        if tools:
            prompt_tokens += count_tokens(json.dumps(tools))
        n = max(1, int(body.get("n") or 1))
        choices: list[dict[str, Any]] = []
        completion_tokens = 0
        for index in range(n):
            if tools and body.get("tool_choice") not in (None, "none"):
                tool = _chosen_tool(tools, body.get("tool_choice"))
                arguments = json.dumps(_instance(tool.get("parameters") or {}, prompt_text, index))
                completion_tokens += count_tokens(arguments)
                message: dict[str, Any] = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{index}",
                            "type": "function",
                            "function": {"name": tool.get("name", "tool"), "arguments": arguments},
                        }
                    ],
                }
                choices.append({"index": index, "message": message, "finish_reason": "tool_calls", "logprobs": None})
                continue
            value = self._value(step, body, messages, index)
            content = scripted_content if scripted_content is not None else self._styled(value)
            completion_tokens += count_tokens(content)
            choice: dict[str, Any] = {
                "index": index,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
            if body.get("logprobs") and self.logprobs:
                yes = _yes_probability(step, messages) if scripted_content is None else None
                choice["logprobs"] = {"content": _logprobs(content, int(body.get("top_logprobs") or 0), yes)}
            choices.append(choice)
        return {
            "id": f"chatcmpl-stub-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _value(self, step: str | None, body: Mapping[str, Any], messages: Sequence[Any], index: int) -> Any:
        if self.responder is not None and step is not None:
            custom = self.responder(step, body)
            if custom is not None:
                return custom
        user = next(
            (_message_text(m) for m in reversed(messages) if isinstance(m, Mapping) and m.get("role") == "user"), ""
        )
        if step is not None and step in _ANSWERS:
            return _ANSWERS[step](user)
        prompt_text = "".join(_message_text(m) for m in messages)
        schema = _schema_of(body, prompt_text)
        return _instance(schema, prompt_text, index) if schema else {"text": sentences(user)[:1] or [""]}

    def _styled(self, value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if self.reply_style == "prose":
            return f"Sure! Here is my assessment.\n```json\n{text}\n```\nLet me know if you need more."
        if self.reply_style == "malformed":
            return text[: max(1, len(text) // 2)] + ', "oops": '
        return text


# ------------------------------------------------------------------------------------------------------
# Default answers to the ragtrace judge's steps (they read the user message rendered by _prompts)
# ------------------------------------------------------------------------------------------------------


def _section(user: str, title: str) -> str:
    """The text after ``title:`` up to the next blank-line-separated ``Title:`` header."""
    match = re.search(re.escape(title) + r":\s?(.*?)(?=\n\n[A-Z][\w ]*:\n|\Z)", user, re.DOTALL)
    return match.group(1).strip() if match else ""


def _items(part: str, label: str) -> list[str]:
    pieces = re.split(r"(?:^|\n)\[" + re.escape(label) + r" \d+\] ", part)
    return [p.strip() for p in pieces[1:]]


def _line(user: str, title: str) -> str:
    match = re.search(r"^" + re.escape(title) + r": ?(.*)$", user, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _claims_of(text: str) -> list[str]:
    return [s for s in sentences(text) if not is_noncommittal(s)]


def _verdicts(claim: str, chunks: Sequence[str]) -> dict[str, Any]:
    supported: list[int] = []
    contradicted: list[int] = []
    claim_words = content_words(claim)
    for number, chunk in enumerate(chunks, start=1):
        share = overlap(claim, chunk)
        if share >= 0.6:
            supported.append(number)
        elif share >= 0.3 and claim_words - content_words(chunk):
            # Same topic, but the claim asserts words the chunk does not have: call it a contradiction.
            contradicted.append(number)
    return {"supported_by": supported, "contradicted_by": contradicted}


def _answer_verify(user: str) -> Any:
    chunks = _items(_section(user, "Context chunks"), "chunk")
    claims = _items(_section(user, "Claims"), "claim")
    return {"results": [{"claim": i, **_verdicts(c, chunks)} for i, c in enumerate(claims, start=1)]}


def _statement_support(user: str) -> tuple[float, float, int]:
    """(best overlap share, P(yes), best chunk number) of a verify_claim request's statement."""
    statement = _line(user, "Statement")
    chunks = _items(_section(user, "Context chunks"), "chunk") or [_line(user, "Context")]
    shares = [overlap(statement, chunk) for chunk in chunks]
    best = max(range(len(shares)), key=lambda i: shares[i])
    share = shares[best]
    return share, min(0.98, max(0.02, 0.5 + (share - 0.6))), best + 1


def _answer_verify_claim(user: str) -> Any:
    share, p_yes, chunk = _statement_support(user)
    if "Context chunks:" not in user:
        # One chunk: the judge asks for one word.
        return "yes" if p_yes >= 0.5 else ("contradicted" if 0.3 <= share < 0.6 else "no")
    reply: dict[str, Any] = {
        "supported": "yes" if p_yes >= 0.5 else "no",
        "contradicted": "yes" if 0.3 <= share < 0.6 else "no",
    }
    if "Context chunks:" in user:
        reply["chunk"] = chunk
    return reply


def _yes_probability(step: str | None, messages: Sequence[Any]) -> float | None:
    if step != "verify_claim":
        return None
    users = [_message_text(m) for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    return _statement_support(users[-1] if users else "")[1]


def _answer_classify(user: str) -> Any:
    reference = _line(user, "Reference answer")
    claims = _items(_section(user, "Claims"), "claim")
    return {"results": [{"claim": i, "correct": overlap(c, reference) >= 0.5} for i, c in enumerate(claims, start=1)]}


def _answer_rate_statements(user: str) -> Any:
    query = _line(user, "Question")
    statements = _items(_section(user, "Statements"), "statement")
    return {
        "results": [
            {"statement": i, "relevant": overlap(query, s) > 0 or overlap(s, query) > 0}
            for i, s in enumerate(statements, start=1)
        ]
    }


def _answer_questions(user: str) -> Any:
    try:
        n = int(_line(user, "Number of questions") or "3")
    except ValueError:
        n = 3
    answer = user.split("Answer:", 1)[-1].strip()
    flag = is_noncommittal(answer)
    words = [w for w in _WORD.findall(answer) if w.lower() not in _STOPWORDS] or ["this"]
    openers = ("What is known about", "Which fact concerns", "What does the answer say about")
    return {
        "questions": [
            {"question": f"{openers[i % len(openers)]} {' '.join(words[i % len(words) :][:8])}?", "noncommittal": flag}
            for i in range(n)
        ]
    }


def _answer_rate_chunks(user: str) -> Any:
    query = _line(user, "Question")
    chunks = _items(_section(user, "Context chunks"), "chunk")
    return {"ratings": [{"chunk": i, "relevance": round(overlap(query, c), 2)} for i, c in enumerate(chunks, start=1)]}


def _answer_rate_answer(user: str) -> Any:
    query, answer = _line(user, "Question"), _line(user, "Answer")
    score = 0.0 if is_noncommittal(answer) else round(max(overlap(query, answer), 0.5 if answer else 0.0), 2)
    return {"explanation": "Scored by word overlap between question and answer.", "score": score}


def _answer_geval_score(user: str) -> Any:
    match = re.search(r"Score range: (\d+) to (\d+)", user)
    low, high = (int(match.group(1)), int(match.group(2))) if match else (1, 5)
    inputs = _section(user, "Inputs")
    share = overlap(_line(user, "Criteria"), inputs)
    return {"score": low + round(share * (high - low)), "explanation": "Scored by overlap with the criteria."}


_ANSWERS: dict[str, Callable[[str], Any]] = {
    _base.EXTRACT_CLAIMS: lambda user: {"claims": _claims_of(user.split("Text:", 1)[-1])},
    _base.VERIFY: _answer_verify,
    "verify_claim": _answer_verify_claim,
    _base.CLASSIFY_CLAIMS: _answer_classify,
    _base.RATE_STATEMENTS: _answer_rate_statements,
    _base.GENERATE_QUESTIONS: _answer_questions,
    _base.DETECT_NONCOMMITTAL: lambda user: {"noncommittal": is_noncommittal(user.split("Answer:", 1)[-1])},
    _base.RATE_CHUNKS: _answer_rate_chunks,
    _base.RATE_ANSWER: _answer_rate_answer,
    _base.GEVAL: lambda user: {
        "steps": [
            "Read the criteria and the inputs.",
            "Check each statement of the output against the criteria.",
            "Weigh how fully the output meets the criteria.",
        ]
    },
    _base.GEVAL + "_score": _answer_geval_score,
}


# ------------------------------------------------------------------------------------------------------
# Generic replies for prompts the stub does not know (another library's), shaped by a JSON schema
# ------------------------------------------------------------------------------------------------------


def _recognise_step(body: Mapping[str, Any]) -> str | None:
    response_format = body.get("response_format") or {}
    name = str((response_format.get("json_schema") or {}).get("name", ""))
    if name.startswith(SCHEMA_PREFIX):
        return name[len(SCHEMA_PREFIX) :]
    for message in body.get("messages") or []:
        match = _STEP.search(_message_text(message))
        if match:
            return match.group(1)
    return None


def _message_text(message: Any) -> str:
    if not isinstance(message, Mapping):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _chosen_tool(tools: Sequence[Any], choice: Any) -> Mapping[str, Any]:
    functions: list[Mapping[str, Any]] = [t.get("function", {}) for t in tools if isinstance(t, Mapping)]
    if isinstance(choice, Mapping):
        wanted = (choice.get("function") or {}).get("name")
        for function in functions:
            if function.get("name") == wanted:
                return function
    return functions[0] if functions else {}


def _schema_of(body: Mapping[str, Any], prompt_text: str) -> Mapping[str, Any] | None:
    """The reply schema: from ``response_format``, else the first JSON schema object in the prompt.

    The prompt is scanned for top-level JSON objects only (a schema's nested definitions are not
    candidates), and the first one that looks like a schema wins: prompts state the schema before
    their examples and input.
    """
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if isinstance(schema, Mapping):
        return schema
    decoder = json.JSONDecoder()
    position = prompt_text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(prompt_text, position)
        except ValueError:
            position = prompt_text.find("{", position + 1)
            continue
        if isinstance(value, Mapping) and ("properties" in value or value.get("type") == "object"):
            return value
        position = prompt_text.find("{", end)
    return None


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return target if isinstance(target, Mapping) else {}
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                if isinstance(option, Mapping) and option.get("type") != "null":
                    return _resolve(option, root)
    return schema


def _instance(schema: Mapping[str, Any], prompt_text: str, seed: int) -> Any:
    """A value valid for ``schema`` whose strings are sentences of the prompt's last input block."""
    pool = _input_sentences(prompt_text) or ["No input."]
    counter = [seed]

    def text() -> str:
        sentence = pool[counter[0] % len(pool)]
        counter[0] += 1
        return sentence

    def build(node: Mapping[str, Any], depth: int, name: str) -> Any:
        node = _resolve(node, schema)
        if node.get("enum"):
            return node["enum"][0]
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        if kind == "object" or "properties" in node:
            props = node.get("properties") or {}
            return {key: build(sub, depth + 1, key) for key, sub in props.items()}
        if kind == "array":
            items = node.get("items") or {"type": "string"}
            count = 0 if depth > 3 else min(len(pool), 3)
            return [build(items, depth + 1, name) for _ in range(max(1, count))]
        # Flags named noncommittal are "no"; every other verdict-like number or flag is "yes".
        committal = "noncommittal" not in name.lower()
        if kind == "integer":
            return int(committal)
        if kind == "number":
            return float(committal)
        if kind == "boolean":
            return committal
        return text()

    return build(schema, 0, "")


def _input_sentences(prompt_text: str) -> list[str]:
    """Sentences of the prompt's trailing input (after the last examples), for plausible strings."""
    tail = prompt_text.rsplit("Now perform the same with the following input", 1)[-1]
    tail = tail.rsplit("input:", 1)[-1] if "input:" in tail else tail[-2000:]
    try:
        value = json.JSONDecoder().raw_decode(tail.strip())[0]
    except ValueError:
        value = tail
    strings: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            strings.extend(sentences(node))
        elif isinstance(node, Mapping):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return [s for s in strings if s][:20]


def schema_errors_of(request: Mapping[str, Any], reply: Any) -> list[str]:
    """Where a chat reply's content breaks the request's ``json_schema`` (empty when none was asked)."""
    response_format = request.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if not isinstance(schema, Mapping) or not isinstance(reply, Mapping):
        return []
    errors: list[str] = []
    choices = reply.get("choices")
    for choice in choices if isinstance(choices, list) else []:
        message = choice.get("message") if isinstance(choice, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        try:
            value = json.loads(content) if isinstance(content, str) else None
        except ValueError:
            errors.append("the content is not JSON")
            continue
        errors.extend(validate(schema, value))
    return errors


def validate(schema: Mapping[str, Any], value: Any, where: str = "$") -> list[str]:
    """The ways ``value`` breaks ``schema`` (the subset a strict json_schema uses: type, enum,
    properties, required, additionalProperties, items, minimum, maximum)."""
    errors: list[str] = []
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        errors.append(f"{where}: {value!r} is not one of {enum}")
    kind = schema.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }
    if isinstance(kind, str) and kind in checks and not checks[kind](value):
        return [*errors, f"{where}: {value!r} is not of type {kind}"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: {value} > maximum {schema['maximum']}")
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                errors.append(f"{where}: missing {name!r}")
        for name, item in value.items():
            if name in properties:
                errors.extend(validate(properties[name], item, f"{where}.{name}"))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected field {name!r}")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            errors.extend(validate(schema["items"], item, f"{where}[{i}]"))
    return errors


def _logprobs(content: str, top: int, yes: float | None = None) -> list[dict[str, Any]]:
    """Per-token logprobs of ``content``: a digit token gets a spread over neighbouring digits; with
    ``yes`` (a verify_claim reply) the first yes/no token gets P(yes) = ``yes`` against P(no)."""
    tokens: list[dict[str, Any]] = []
    for piece in re.findall(r"\d|\w+|\s+|[^\w\s]", content):
        if yes is not None and piece in ("yes", "no"):
            answers = [("yes", yes), ("no", 1.0 - yes)]
            answers.sort(key=lambda pair: pair[1] if pair[0] == piece else -1.0, reverse=True)
            alternatives = [{"token": t, "logprob": math.log(max(p, 1e-9)), "bytes": None} for t, p in answers]
            tokens.append(
                {
                    "token": piece,
                    "logprob": alternatives[0]["logprob"],
                    "bytes": None,
                    "top_logprobs": alternatives[: max(top, 1)],
                }
            )
            yes = None  # only the answer's token: "contradicted" is written, not weighted
            continue
        if piece.isdigit():
            digit = int(piece)
            spread = [(digit, 0.7), (digit + 1, 0.2), (max(digit - 1, 0), 0.1)]
            alternatives = [{"token": str(d), "logprob": math.log(p), "bytes": None} for d, p in spread][: max(top, 1)]
            tokens.append({"token": piece, "logprob": math.log(0.7), "bytes": None, "top_logprobs": alternatives})
        else:
            tokens.append(
                {
                    "token": piece,
                    "logprob": 0.0,
                    "bytes": None,
                    "top_logprobs": [{"token": piece, "logprob": 0.0, "bytes": None}],
                }
            )
    return tokens


def _error(status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class _Server(ThreadingHTTPServer):
    # The stdlib default backlog of 5 overflows when a client opens dozens of connections at once,
    # and the kernel then resets some of them: spurious connection errors in the client.
    request_queue_size = 256
    daemon_threads = True


def _make_handler(stub: StubOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; without this, delayed ACKs add ~40 ms per reply.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the stub's log is ``stub.requests``."""

        def do_POST(self) -> None:
            started = time.monotonic()
            stub._enter()
            status, step, logged, tokens = 500, None, {}, (0, 0)
            errors: tuple[str, ...] = ()
            headers: dict[str, str] = {}
            reply: Any = _error(500, "stub failure")
            try:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                if isinstance(body, dict):
                    logged = body
                    status, headers, reply, step = stub.handle(self.path, body)
                else:
                    status, reply = 400, _error(400, "body is not a JSON object")
                usage = reply.get("usage") if isinstance(reply, dict) else None
                if isinstance(usage, dict):
                    tokens = (int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
                errors = tuple(schema_errors_of(logged, reply)) if status == 200 else ()
            finally:
                # Logged before the reply is written: a client holding its reply finds the entry.
                entry = LoggedRequest(self.path, logged, started, time.monotonic(), status, step, *tokens, errors)
                stub._leave(entry)
            try:
                self._send(status, headers, reply)
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up (a timeout test); nothing to answer.
                self.close_connection = True

        def _send(self, status: int, headers: Mapping[str, str], reply: Any) -> None:
            data = (
                json.dumps(reply).encode()
                if not isinstance(reply, (bytes, str))
                else (reply.encode() if isinstance(reply, str) else reply)
            )
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the stub until interrupted: ``python -m ragtrace.testing._stub_openai --port 8765 [--latency 0.2]``."""
    import argparse

    parser = argparse.ArgumentParser(description="A local OpenAI-compatible stub server for ragtrace demos.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds every reply waits")
    parser.add_argument("--mode", choices=["json_schema", "json_object", "text"], default="json_schema")
    args = parser.parse_args(argv)
    server = StubOpenAIServer(port=args.port, latency=args.latency, mode=args.mode).start()
    print(f"stub OpenAI server at {server.base_url} (Ctrl-C stops it)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
