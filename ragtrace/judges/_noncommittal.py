"""Wording that asserts nothing to check, shared by every judge's claim extraction.

An evasion ("I don't know"), a refusal ("The context does not say.", "It isn't mentioned.") or an answer
that is only a shrug ("Unknown.", "Maybe.") is no claim: verified, it would be unsupported and scored as a
hallucination. The offline judge and the OpenAI judge's sentence claims drop the same sentences, so a
refusal reads the same whichever judge or tier scores it. English wording only.

Contract: pure; ``noncommittal_wording`` reads one sentence or a short answer.
"""

from __future__ import annotations

import re

_NONCOMMITTAL_PATTERNS = re.compile(
    r"""\b(
      i\s+(?:do\s+not|don't|dont)\s+know
    | i(?:\s+am|'m|\s+m)\s+not\s+(?:sure|certain|able)
    | i\s+(?:have\s+no|don't\s+have\s+(?:any|enough)?)\s*(?:idea|information|knowledge|data|details)
    | (?:i\s+)?(?:cannot|can't|can\s+not|could\s+not|couldn't|am\s+unable\s+to|'m\s+unable\s+to)
        \s+(?:answer|say|tell|determine|help|assist|find|provide|confirm|verify)
    | (?:there\s+is\s+|there's\s+)?(?:no|not\s+enough|insufficient)\s+(?:information|data|context|details|evidence)
        \s+(?:in|about|on|to|available|provided|given)
    | (?:the\s+)?(?:context|documents?|sources?|passages?)\s+(?:does\s+not|doesn't|do\s+not|don't)\s+
        (?:say|mention|contain|state|specify|provide|include)
    | (?:not|\w+n't)\s+(?:been\s+|be\s+)?(?:mentioned|stated|specified|listed|indicated)\W*$
    | unable\s+to\s+(?:answer|determine|find|say)
    | as\s+an\s+ai\b
    | i\s+have\s+no\s+idea\b
    | (?:sorry|apologi[sz]e)[^.]{0,40}\b(?:can't|cannot|unable|not\s+able)
    )""",
    re.IGNORECASE | re.VERBOSE,
)

# A whole answer that is only an evasion. Anchored: "an unknown artist painted it" is an answer.
_BARE_EVASION = re.compile(
    r"""^\W*(?:
      unknown | unclear | uncertain | n/?a | none\s+given | no\s+(?:comment|clue|answer|idea)
    | (?:it\s+)?depends | maybe | perhaps | possibly | probably | hard\s+to\s+(?:say|tell) | sorry
    | (?:who|nobody|no\s+one)\s+(?:really\s+)?knows | who\s+can\s+(?:say|tell) | dunno | not\s+(?:sure|certain)
    | not\s+(?:mentioned|stated|specified|given|provided|known|available|clear|found)
    | (?:it\s+is|it's|that\s+is|that's)\s+(?:unclear|unknown|uncertain|not\s+(?:clear|known|specified|mentioned|stated))
    | i(?:'d|\s+would)\s+rather\s+not\s+(?:say|answer|comment)
    | (?:this\s+)?cannot\s+be\s+(?:determined|answered|known)
    )\W*$""",
    re.IGNORECASE | re.VERBOSE,
)


# The sources named with a negated verb of saying, in any order ("The provided text does not say when she
# was born."): a refusal. A negative fact about a document names no verb of saying ("The document was not
# signed until 1787.") and is a claim.
_SOURCES = re.compile(
    r"\b(?:the|this|these|those|provided|given|retrieved|available)\s+(?:\w+\s+)?"
    r"(?:context|contexts|documents?|passages?|text|texts|sources?)\b",
    re.IGNORECASE,
)
_NEGATED_SAYING = re.compile(
    r"(?:\bnot|n't)\s+(?:\w+\s+)?(?:say|mention|state|specify|provide|give|contain|include|list|indicate)\b"
    r"|(?:\bnot|n't)\s+(?:be\s+)?(?:available|found|present|given|provided|included)\s+in\b",
    re.IGNORECASE,
)


def noncommittal_wording(text: str) -> bool:
    """True when the wording is evasive: "I don't know", "I'm not sure", "cannot answer", refusals ("It
    isn't mentioned.", "The provided text does not say."), or an answer that is nothing but an evasion
    ("Unknown.", "Not mentioned.", "It depends.", "Maybe.")."""
    text = text.replace("\u2019", "'")
    if _NONCOMMITTAL_PATTERNS.search(text) is not None or _BARE_EVASION.match(text.strip()) is not None:
        return True
    return _SOURCES.search(text) is not None and _NEGATED_SAYING.search(text) is not None
