"""Reading the OpenAI-compatible judge's replies: verdict words, embeddings, logprobs, per-claim answers.

Pure functions over what the endpoint returned (no I/O), used by ``ragtrace.judges.openai``: the
probability-weighted G-Eval score, P(yes) of a per-claim answer from the logprobs of its answer token,
and the claims an answer is split into without a call (a bare short answer with its question, the
answer's sentences).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from ragtrace.judges._base import (
    Verdict,
)
from ragtrace.judges._noncommittal import noncommittal_wording
from ragtrace.judges._question_claims import answer_claim
from ragtrace.judges.openai.parsing import (
    InvalidReply,
    ReplyParseError,
    align,
    as_index,
    as_number,
    pick,
    pick_list,
)

_BARE_ANSWER_WORDS = 8
_ONE_FACT_WORDS = 16
# What joins clauses or lists within one sentence: punctuation inside it, coordinating and subordinating
# conjunctions, relative pronouns. One of them and the sentence may hold several facts.
_CLAUSE_JOIN = re.compile(
    r"[,;:()\u2013\u2014]|\s-\s|\b(and|but|or|nor|yet|so|while|whereas|although|though|because|since|unless|"
    r"until|if|when|whenever|where|after|before|which|who|whom|whose|that|as well as|both|either|neither)\b",
    re.I,
)
# A second fact joined without a clause: an agent or a companion ("designed by X", "with Y"), a list
# mark, a bracket.
_FACT_JOIN = re.compile(
    r"[\[\]/&]|--|\b(by|with|without|including|plus|via|such as|as)\b",
    re.I,
)
# A phrase of place, time or circumstance: a preposition, or a year that follows none ("born 10 December
# 1815 in London"). Two of them ("in the 1996 Summer Olympics in Mongolia", "the starting job at Oklahoma
# over Tom Brady") may be two facts.
_PHRASE = re.compile(
    r"\b(in|on|at|during|from|to|into|onto|throughout|for|over|under|despite|alongside|beside|beneath|near|"
    r"across|against|among|between|through|toward|towards|within|outside|inside)\b|(?<!\bin )(?<!\bon )(?<!\bof )"
    r"(?<!\bby )\b(1[0-9]{3}|20[0-9]{2})\b",
    re.I,
)
# A verb of a predicate: an auxiliary, or a lower-case word in -ed (not hyphenated, not after an article:
# "top-ranked", "a noted actor" are adjectives) or a common irregular past form. Two of them apart ("won a
# cross as the gunner of a soldier born in 1889", "is a blog based in New Jersey") are two predicates;
# together, or with only adverbs between ("was defeated", "has been elected", "was later overturned"), one.
_PREDICATE_VERB = re.compile(
    r"\b(is|are|was|were|be|been|has|have|had|does|did|(?<![-\w])(?<!\ba )(?<!\ban )(?<!\bthe )[a-z]{2,}ed|born|"
    r"made|won|known|held|built|written|became|began|grew|wrote|took|gave|led|left|sold|found|spent|ran|set)\b"
)
_ADVERB = re.compile(r"(\w+ly|now|later|first|also|only|still|then|just|once|since|soon|already|ever|even)", re.I)
# A word of a refusal or of talk about the sources ("I couldn't find this in the provided documents."):
# an answer with one is left to the model, which drops a refusal from the claims, even where
# ``noncommittal_wording`` does not know its wording; taken whole, a refusal would be verified,
# unsupported and scored as a hallucination.
_REFUSAL = re.compile(
    r"\b(cannot|unknown|unclear|unsure|idea|context|contexts|document|documents|passage|passages|source|"
    r"sources|provided|information|text|mention|mentions|mentioned|specify|specifies|specified|stated|"
    r"listed|available)\b",
    re.I,
)
# A negation: a bare "No" answers a yes/no question, but a sentence with one is left to the model,
# which knows a refusal ("It is not stated.") from a negative fact.
_NEGATION = re.compile(r"n't\b|\b(not|no|never|none|nothing|nobody|neither|nor)\b", re.I)
# The longest claim made without a call: the wire keeps a claim of up to 300 characters whole
# (``ragtrace._wire_claims.MAX_CLAIM_CHARS``), and a longer question is left to the model's rewording.
_ONE_FACT_CLAIM_CHARS = 300
_VERDICT_WORDS = {
    "supported": Verdict.SUPPORTED,
    "support": Verdict.SUPPORTED,
    "supports": Verdict.SUPPORTED,
    "entailed": Verdict.SUPPORTED,
    "yes": Verdict.SUPPORTED,
    "contradicted": Verdict.CONTRADICTED,
    "contradicts": Verdict.CONTRADICTED,
    "contradiction": Verdict.CONTRADICTED,
    "neither": Verdict.NEITHER,
    "neutral": Verdict.NEITHER,
    "none": Verdict.NEITHER,
    "no": Verdict.NEITHER,
}
_FIRST_WORD = re.compile(r"[a-z]+")
_WORD_READ = 256
_SCORE_VALUE = re.compile(r'"score"\s*:\s*"?\s*(\d+)')

TokenLogprobs = list[tuple[str, list[tuple[str, float]]]]
"""Per generated token: its text and the top alternatives with their logprobs."""


@dataclass(frozen=True, slots=True)
class _ChatReply:
    content: str
    logprobs: TokenLogprobs | None
    deadline: float = math.inf
    """``time.monotonic()`` by which the reply must be read (the call's send time plus the judge's timeout)."""


def _verdict_word(value: Any) -> Verdict:
    word = str(value).strip().lower()
    if word in _VERDICT_WORDS:
        return _VERDICT_WORDS[word]
    raise ReplyParseError(f"unknown verdict {value!r}")


def _vectors(response: Any, count: int) -> list[list[float]]:
    """The ``count`` vectors of an embeddings reply in input order; raise ``ReplyParseError`` otherwise."""
    data = getattr(response, "data", None)
    if not isinstance(data, list):
        raise ReplyParseError("embeddings reply has no data list")
    placed: dict[int, list[float]] = {}
    for position, item in enumerate(data):
        index = getattr(item, "index", None)
        index = position if index is None else index
        if not _is_int(index) or index in placed:
            raise ReplyParseError(f"embedding {position} has a bad or repeated index: {index!r}")
        vector = getattr(item, "embedding", None)
        if not isinstance(vector, list) or not vector or not all(_is_finite(x) for x in vector):
            raise ReplyParseError(f"embedding {index} is not a list of finite numbers")
        placed[index] = [float(x) for x in vector]
    if sorted(placed) != list(range(count)):
        raise ReplyParseError(f"asked for {count} vectors, got {len(placed)}")
    return [placed[i] for i in range(count)]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _token_logprobs(choice: Any) -> TokenLogprobs | None:
    """The reply's token logprobs; None when absent or malformed (G-Eval then uses the written integer)."""
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if not isinstance(content, list) or not content:
        return None
    tokens: TokenLogprobs = []
    for item in content:
        token = getattr(item, "token", None)
        alternatives = getattr(item, "top_logprobs", None) or []
        if not isinstance(token, str) or not isinstance(alternatives, list):
            return None
        top: list[tuple[str, float]] = []
        for alt in alternatives:
            text, logprob = getattr(alt, "token", None), getattr(alt, "logprob", None)
            if not isinstance(text, str) or not _is_finite(logprob):
                return None
            top.append((text, float(logprob)))
        tokens.append((token, top))
    return tokens


def _weighted_score(reply: _ChatReply, low: int, high: int) -> float | None:
    """G-Eval's probability-weighted score: sum of v * p(v) over the score token's integer alternatives.

    The score token is found by rebuilding the text from the tokens and locating the ``"score"``
    value; ``None`` when there are no logprobs or no alternative is an integer in range.
    """
    if not reply.logprobs:
        return None
    text = "".join(token for token, _ in reply.logprobs)
    match = _SCORE_VALUE.search(text)
    if match is None:
        return None
    offset = match.start(1)
    position = 0
    for token, top in reply.logprobs:
        if position <= offset < position + len(token):
            weights: dict[int, float] = {}
            for alternative, logprob in top or [(token, 0.0)]:
                stripped = alternative.strip()
                if stripped.isdigit() and low <= int(stripped) <= high:
                    weights[int(stripped)] = weights.get(int(stripped), 0.0) + math.exp(logprob)
            total = sum(weights.values())
            if total <= 0:
                return None
            return sum(value * p for value, p in weights.items()) / total
        position += len(token)
    return None


_YES_WORDS = ("yes", "true", "supported")
_NO_WORDS = ("no", "false", "unsupported")
_ANSWER_VALUE = re.compile(r'"supported"\s*:\s*"?')


@dataclass(frozen=True, slots=True)
class _ClaimAnswer:
    """One claim's answer: P(yes) (from logprobs, or 1.0/0.0 from the written word), the written
    contradiction flag, and the chunk it rests on (0-based)."""

    p_yes: float
    contradicted: bool
    chunk: int
    weighted: bool

    def verdicts(self, count: int, threshold: float = 0.5) -> list[Verdict]:
        """SUPPORTED at the chunk when P(yes) reaches ``threshold``, else CONTRADICTED there when the
        judge wrote so, else NEITHER everywhere."""
        row = [Verdict.NEITHER] * count
        if self.p_yes >= threshold:
            row[self.chunk] = Verdict.SUPPORTED
        elif self.contradicted:
            row[self.chunk] = Verdict.CONTRADICTED
        return row

    def probabilities(self, count: int) -> list[float]:
        row = [0.0] * count
        row[self.chunk] = self.p_yes
        return row


def _yes_no(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().strip('."').lower()
    if word in _YES_WORDS:
        return True
    if word in _NO_WORDS:
        return False
    raise ReplyParseError(f"{what} is not yes or no: {value!r}")


def _read_claim_answer(obj: Any, reply: _ChatReply, count: int) -> _ClaimAnswer:
    supported = _yes_no(pick(obj, "supported", "answer", "verdict"), "supported")
    contradicted = False
    if isinstance(obj, Mapping) and any(str(k).lower() == "contradicted" for k in obj):
        contradicted = _yes_no(pick(obj, "contradicted"), "contradicted")
    chunk = 0
    cited = isinstance(obj, Mapping) and any(str(k).lower() in ("chunk", "passage") for k in obj)
    if count > 1 or cited:
        number = as_index(pick(obj, "chunk", "passage"), "chunk")
        if not 1 <= number <= count:
            raise InvalidReply(f"the answer rests on chunk {number}, but the request has chunks 1 to {count}")
        chunk = number - 1
    p_yes = _yes_probability(reply)
    if p_yes is None:
        return _ClaimAnswer(1.0 if supported else 0.0, contradicted and not supported, chunk, weighted=False)
    return _ClaimAnswer(p_yes, contradicted, chunk, weighted=True)


_RATING_KEY = re.compile(r"(?:chunk)?[\s_-]*(\d+)", re.I)


def _read_ratings(obj: Any, count: int) -> list[float]:
    """Every chunk's relevance in [0, 1], in chunk order, from a reply's ``ratings``.

    The shape asked for is an object with one number under each chunk's key (``"chunk_1"``...; ``"chunk 1"``
    and ``"1"`` read alike); a list of ``{"chunk": n, "relevance": x}`` items (what a model writes from habit,
    or an endpoint that ignores the schema) is read as meant. Both are placed by ``align``: a chunk without a
    rating or rated twice, or one the request does not have, is ``InvalidReply``, as is a key naming no
    chunk; a rating outside [0, 1] is ``ReplyParseError``. No rating is guessed.
    """
    ratings = obj.get("ratings") if isinstance(obj, Mapping) else None
    if isinstance(ratings, Mapping):
        items = [{"chunk": _rated_chunk(key, count), "relevance": value} for key, value in ratings.items()]
    else:
        items = pick_list(obj, "ratings", "relevance", "chunks")
    return align(items, count, key="chunk", read=_read_rating, what="chunk")


def _rated_chunk(key: Any, count: int) -> int:
    """The chunk number a ``ratings`` key names (``chunk_2``, ``chunk 2``, ``2``)."""
    match = _RATING_KEY.fullmatch(str(key).strip())
    if match is None:
        raise InvalidReply(f"ratings name {str(key)[:40]!r}, but the request has chunks 1 to {count}")
    return int(match.group(1))


def _read_rating(item: Any) -> float:
    return as_number(pick(item, "relevance", "score", "rating"), "relevance", low=0.0, high=1.0)


def _read_claim_word(text: str, reply: _ChatReply) -> _ClaimAnswer:
    """One word: yes, no or contradicted (any case, punctuation around it); P(yes) from the logprobs."""
    # The answer is the first word of a 4-token reply: a longer reply (a hostile one) is not read past it.
    first = _FIRST_WORD.search(text[:_WORD_READ].lower())
    if first is None:
        raise ReplyParseError(f"the reply is not yes, no or contradicted: {text[:40]!r}")
    word = first.group()
    if word.startswith("contradict"):
        supported, contradicted = False, True
    elif word in ("yes", "no"):
        supported, contradicted = word == "yes", False
    else:
        raise ReplyParseError(f"the reply is not yes, no or contradicted: {text[:40]!r}")
    p_yes = _yes_probability(reply)
    if p_yes is None:
        return _ClaimAnswer(1.0 if supported else 0.0, contradicted, 0, weighted=False)
    return _ClaimAnswer(p_yes, contradicted, 0, weighted=True)


def _answer_class(token: str) -> bool | None:
    """True for a token that starts "yes", False for one that starts "no", None otherwise."""
    word = token.strip().strip('"').strip().lower()
    if not word:
        return None
    if word.startswith("y"):
        return True
    if word.startswith("n") and not word.startswith("ne"):  # "neither" is not a no to a yes/no question
        return False
    return None


def _yes_probability(reply: _ChatReply) -> float | None:
    """P(yes) / (P(yes) + P(no)) at the answer token, from its top alternatives; None without logprobs
    or when no alternative there is a yes or a no."""
    if not reply.logprobs:
        return None
    text = "".join(token for token, _ in reply.logprobs)
    match = _ANSWER_VALUE.search(text)
    offset = match.end() if match is not None else len(text) - len(text.lstrip())
    position = 0
    for token, top in reply.logprobs:
        end = position + len(token)
        # The token holding the answer's first letter (a token may also hold the opening quote).
        if end > offset and token[max(0, offset - position) :].strip().strip('"'):
            yes = no = 0.0
            for alternative, logprob in top or [(token, 0.0)]:
                kind = _answer_class(alternative)
                if kind is True:
                    yes += math.exp(logprob)
                elif kind is False:
                    no += math.exp(logprob)
            if yes + no <= 0.0:
                return None
            return yes / (yes + no)
        position = end
    return None


def _short_answer(text: str, question: str | None, max_words: int) -> str | None:
    """``text`` stripped when it answers a question in at most ``max_words`` words of one sentence on one
    line and is no evasion, shrug or question back (``noncommittal_wording``) and names no source nor an
    unknown (``_REFUSAL``), else None: what both claims made without a call ask of an answer."""
    if not question or not question.strip():
        return None
    answer = text.strip()
    # The shape first: a long answer is turned away before any wording is read.
    if len(answer.split()) > max_words or "\n" in answer or re.search(r"[.!?;:]\s+\S", answer):
        return None
    if noncommittal_wording(answer) or _REFUSAL.search(answer) or answer.endswith("?"):
        return None
    return answer


def _bare_answer_claim(text: str, question: str | None) -> str | None:
    """ "<question>? <answer>" (``answer_claim``) for a bare short answer (a name, a number, yes/no, a
    short list), else None."""
    answer = _short_answer(text, question, _BARE_ANSWER_WORDS)
    if answer is None or question is None:
        return None
    # A sentence ("She was born in 1959.", "Ada was born 1815 and died 1852") is extracted as usual: by its
    # closing period or by a verb of its own.
    if len(answer.split()) > 3 and (answer.endswith(".") or _predicates(answer) > 0):
        return None
    return answer_claim(question, answer.rstrip("."))


def _one_fact_claim(text: str, question: str | None) -> str | None:
    """ "<question>? <sentence>" (``answer_claim``) for an answer to a question that is one short sentence
    stating one fact, else None.

    Such an answer is already the one atomic claim a model would extract from it, so asking for the split
    buys nothing; joined to its question, it keeps the question's meaning as ``extract="sentences"``
    claims do (the question resolves a pronoun or an elided comparison: "He won more titles."). Left to
    the model, whose split into atomic claims is what lets one wrong fact among right ones be found: a
    sentence of several clauses or lists (a comma, a bracket, a conjunction, a relative pronoun), a second
    fact joined by "by" or "with", two phrases of place, time or circumstance ("in 1996 in Mongolia"), two
    predicates ("is a blog based in New Jersey"). Left to it too, because it may assert nothing to check:
    a negation, a refusal or a sentence about the sources ("The provided context does not say.", "I have
    no idea."), which the model drops. The query must be a question (end with "?"): a request ("Tell me
    about Paris") is no question to join an answer to. A joined claim longer than the wire keeps whole is
    left to the model's rewording.

    The joins listed are English; a sentence whose second fact they miss (another language's "and") is
    verified as one claim, unsupported when any part of it is: the count of claims is coarser, the
    verdict no kinder.
    """
    answer = _short_answer(text, question, _ONE_FACT_WORDS)
    if answer is None or question is None or not question.strip().endswith("?"):
        return None
    if _CLAUSE_JOIN.search(answer) or _FACT_JOIN.search(answer) or _NEGATION.search(answer):
        return None
    if len(_PHRASE.findall(answer)) > 1 or _predicates(answer) > 1:
        return None
    claim = answer_claim(question, answer)
    return claim if len(claim) <= _ONE_FACT_CLAIM_CHARS else None


def _predicates(sentence: str) -> int:
    """How many predicates ``sentence`` has, counted by their verbs (``_PREDICATE_VERB``); verbs with
    nothing or only adverbs between them ("has been elected", "was later overturned") count once."""
    count, last_end = 0, None
    for match in _PREDICATE_VERB.finditer(sentence):
        between = sentence[last_end : match.start()].split() if last_end is not None else None
        if between is None or not all(_ADVERB.fullmatch(word) for word in between):
            count += 1
        last_end = match.end()
    return count


def _sentence_claims(text: str, question: str | None) -> list[str]:
    """The sentences of ``text`` as claims, each joined to the question when there is one
    (``answer_claim``)."""
    import pysbd  # a dependency of the package (the offline judge's segmenter); imported on first use

    claims: list[str] = []
    for sentence in pysbd.Segmenter(language="en", clean=False).segment(text):
        sentence = sentence.strip()
        if not re.search(r"\w", sentence) or sentence.endswith("?") or noncommittal_wording(sentence):
            continue  # a question, an evasion or a refusal asserts nothing to check
        claim = answer_claim(question, sentence) if question and question.strip() else sentence
        if claim not in claims:
            claims.append(claim)
    return claims
