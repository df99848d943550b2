"""Secrets taken out of text that leaves the process: URL credentials, bearer-like tokens, known keys.

Every message ragtrace writes where someone else reads it (a log line, a span attribute or event, a
score's explanation the collector stores and shows) may quote a URL or an endpoint's words: a judge
whose 401 body echoes the ``Authorization`` header, a ``http://user:pass@host`` endpoint. ``scrub``
replaces, in any text, the user information of every URL, the values of credential-looking headers,
query parameters and JSON fields, bearer-like tokens (``sk-...``, JWTs, GitHub and Slack tokens, AWS
key ids) and any exact secret the caller knows (a judge's own API key); ``strip_url`` does the first
for one URL. Both are pure and cheap: a text is cut at ``MAX_CHARS`` first, and every pattern is
anchored on a literal with bounded repeats (no backtracking blow-up).

They are the last guard, not the first: error text from an endpoint is first reduced to its type and
status where it is made (``ragtrace.judges.openai.retry``), so what is scrubbed here is what slipped
through a message ragtrace could not shape (a reply the judge quotes, a user's exception).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

MASK: Final = "***"
"""What a secret is replaced by."""

MAX_CHARS: Final = 4096
"""Characters of a text ``scrub`` keeps: a message or an explanation is a few sentences, and a longer one
(a hostile judge's 1 MB "explanation") would cost the patterns' work for nothing. The cut drops the
token it falls in, so no prefix of a secret is left unmasked."""

CUT: Final = " [cut]"
"""Ends a text ``scrub`` cut at ``MAX_CHARS``."""

_MIN_KNOWN = 4
"""A known secret shorter than this is not searched for (it would mask ordinary words)."""

# scheme://user:pass@host -> scheme://***@host (the host stays: it says where the failure was).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,31}://)[^\s/?#@\"'<>]{1,512}@")
# Authorization: Bearer xyz, "authorization": "Basic xyz", x-api-key=xyz, ...
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key|x-goog-api-key|x-auth-token|cookie|set-cookie)"
    r"([\"']?\s{0,8}[:=]\s{0,8}[\"']?)"
    r"(?:(?:bearer|basic|token|digest)\s{1,8})?[^\s\"',;}]{1,4096}"
)
# api_key=xyz, "access_token": "xyz", password: xyz (query strings, JSON, prose).
_FIELD = re.compile(
    r"(?i)\b(api[_\-]?key|apikey|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token|id[_\-]?token|"
    r"client[_\-]?secret|secret[_\-]?key|secret|password|passwd|pwd)"
    r"([\"']?\s{0,8}[:=]\s{0,8}[\"']?)[^\s\"'&,;}]{1,4096}"
)
# Bearer xyz in prose (a token has a digit or a symbol: "basic geography" is no credential); then token
# shapes that are credentials wherever they stand.
_BEARER = re.compile(
    r"(?i)\b(bearer|basic)\s{1,8}(?=[A-Za-z0-9._~+/=\-]{0,4096}[0-9._~+/=\-])[A-Za-z0-9._~+/=\-]{8,4096}"
)
_TOKEN = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{16,4096}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,4096}"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,4096}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\beyJ[A-Za-z0-9_\-]{8,4096}\.[A-Za-z0-9_\-]{8,4096}\.[A-Za-z0-9_\-]{0,4096}"
)


def _cut(text: str) -> str:
    """The first ``MAX_CHARS`` of ``text``, without the token the cut falls in (it may be part of a secret)."""
    head = text[:MAX_CHARS]
    if text[MAX_CHARS].isspace():
        return head
    last_space = max(head.rfind(c) for c in " \t\n\r")
    return head[: last_space + 1]


def strip_url(url: object) -> str:
    """``url`` as text without its user information (``http://u:p@h/`` -> ``http://***@h/``) and with
    credential query parameters masked; any other text is scrubbed the same way."""
    return scrub(str(url))


def scrub(text: str, known: Iterable[str] = ()) -> str:
    """``text`` with every secret ``MASK``-ed: the exact strings in ``known`` (each at least
    ``_MIN_KNOWN`` characters), URL credentials, credential headers and fields, bearer-like tokens; cut
    at ``MAX_CHARS`` (then ended by ``CUT``)."""
    if not text:
        return text
    for secret in sorted({s for s in known if isinstance(s, str) and len(s) >= _MIN_KNOWN}, key=len, reverse=True):
        text = text.replace(secret, MASK)  # before the cut: a known secret is masked wherever it stands
    if len(text) > MAX_CHARS:
        text = _cut(text) + CUT
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _FIELD.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
    return _TOKEN.sub(MASK, text)


def url_secrets(url: object) -> list[str]:
    """The user name and password written in ``url`` (``http://user:pass@host``), for ``scrub(known=)``:
    once decoded by a client they may be quoted without the ``@`` that ``scrub`` recognises."""
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(str(url))
    except ValueError:
        return []
    found = [parts.username, parts.password]
    return [unquote(s) for s in found if s] + [s for s in found if s]
