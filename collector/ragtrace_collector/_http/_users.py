"""Named people for the pages' sign-in: the users file (``serve --users-file FILE``) and its password hashes.

The file holds one person a line, ``NAME:HASH``; blank lines and lines starting with ``#`` are ignored. ``NAME`` is
1 to 64 characters, none of them a colon, a space or a control character. ``HASH`` is
``scrypt$N$R$P$SALT$KEY``: the stdlib's ``hashlib.scrypt`` of the password (UTF-8) with those costs, ``SALT``
(16 random bytes) and ``KEY`` (32 bytes) in unpadded URL-safe base64. ``ragtrace-collector users add NAME --file
FILE`` writes such a line (``hash_password``); the file never holds a password, and nothing here logs one.

A sign-in compares in constant time, and a name the file does not hold costs the same scrypt as a wrong password,
so neither the answer's time nor its words tell which names exist.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ragtrace import ConfigurationError

__all__ = ["NAME_PATTERN", "PasswordHash", "Users", "hash_password", "read_users", "users_text"]

NAME_PATTERN = re.compile(r"[^\s:\x00-\x1f\x7f]{1,64}")
"""A person's name in the file: what an author field shows, with no separator or control character in it."""

_N, _R, _P = 2**14, 8, 1  # scrypt's recommended interactive costs: ~16 MiB and tens of ms a sign-in
_SALT_BYTES, _KEY_BYTES = 16, 32
_MAX_N = 2**20  # a file asking for more would take a GiB of memory per sign-in: refused as a mistake
_MAXMEM = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PasswordHash:
    """One scrypt hash: its costs, salt and derived key."""

    n: int
    r: int
    p: int
    salt: bytes = field(repr=False)
    key: bytes = field(repr=False)

    def matches(self, password: str) -> bool:
        """Whether ``password`` derives this key (compared in constant time)."""
        derived = hashlib.scrypt(
            password.encode("utf-8", "surrogatepass"),
            salt=self.salt,
            n=self.n,
            r=self.r,
            p=self.p,
            maxmem=_MAXMEM,
            dklen=len(self.key),
        )
        return hmac.compare_digest(derived, self.key)

    def text(self) -> str:
        """The hash as the file writes it."""
        return f"scrypt${self.n}${self.r}${self.p}${_b64(self.salt)}${_b64(self.key)}"

    @classmethod
    def parse(cls, text: str) -> PasswordHash:
        """``ValueError`` naming what is wrong when ``text`` is not a hash this module writes."""
        parts = text.split("$")
        if len(parts) != 6 or parts[0] != "scrypt":
            raise ValueError(
                "the hash is not scrypt$N$R$P$SALT$KEY (write the line with `ragtrace-collector users add`)"
            )
        try:
            n, r, p = (int(x) for x in parts[1:4])
            salt, key = _unb64(parts[4]), _unb64(parts[5])
        except (ValueError, binascii.Error):
            raise ValueError("the hash's costs or its salt and key do not parse") from None
        if n < 2 or n & (n - 1) or n > _MAX_N or not 1 <= r <= 64 or not 1 <= p <= 16 or n * r * 128 * p > _MAXMEM:
            raise ValueError(f"the hash's costs N={n} R={r} P={p} are out of range (N a power of 2 up to {_MAX_N})")
        if len(salt) < 8 or len(key) < 16:
            raise ValueError("the hash's salt or key is too short")
        return cls(n, r, p, salt, key)


def hash_password(password: str, *, salt: bytes | None = None) -> PasswordHash:
    """A new hash of ``password`` with a random salt (``salt`` only for tests)."""
    salt = salt if salt is not None else os.urandom(_SALT_BYTES)
    key = hashlib.scrypt(
        password.encode("utf-8", "surrogatepass"), salt=salt, n=_N, r=_R, p=_P, maxmem=_MAXMEM, dklen=_KEY_BYTES
    )
    return PasswordHash(_N, _R, _P, salt, key)


@functools.cache
def _dummy() -> PasswordHash:
    """What an unknown name is checked against, so it costs what a known one does. Made on first use, not at import:
    scrypt takes 16 MiB for a moment, which a collector without a users file should not (its peak RSS is tested)."""
    return hash_password("", salt=b"\0" * _SALT_BYTES)


@dataclass(frozen=True, slots=True)
class Users:
    """The people of a users file, by name."""

    hashes: Mapping[str, PasswordHash] = field(default_factory=dict, repr=False)

    def __contains__(self, name: object) -> bool:
        return name in self.hashes

    def check(self, name: str, password: str) -> str | None:
        """``name`` when it is in the file and ``password`` is its password, else None (in the same time)."""
        found = self.hashes.get(name)
        right = (found or _dummy()).matches(password)
        return name if found is not None and right else None


def read_users(path: Path, flag: str = "--users-file") -> Users:
    """The users of the file at ``path``. ``ConfigurationError`` naming the file, the line and the fix when it
    cannot be read or a line is wrong (a name twice is wrong: which password would count?)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{flag} {path}: cannot read it ({type(exc).__name__})") from None
    hashes: dict[str, PasswordHash] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, rest = line.partition(":")
        where = f"{flag} {path}, line {number}"
        if not colon:
            raise ConfigurationError(f"{where}: not NAME:HASH; write it with `ragtrace-collector users add NAME`")
        if not NAME_PATTERN.fullmatch(name):
            raise ConfigurationError(
                f"{where}: the name must be 1 to 64 characters without spaces, colons or control characters"
            )
        if name in hashes:
            raise ConfigurationError(f"{where}: {name} is in the file twice; keep one line per person")
        try:
            hashes[name] = PasswordHash.parse(rest)
        except ValueError as why:  # never echoes the line: it is a hash, but still nobody's business
            raise ConfigurationError(f"{where} ({name}): {why}") from None
    if not hashes:
        raise ConfigurationError(f"{flag} {path}: no one in it; add a person with `ragtrace-collector users add NAME`")
    return Users(hashes)


def users_text(existing: str, name: str, hashed: PasswordHash) -> str:
    """The file's text ``existing`` with ``name``'s line set to ``hashed`` (replaced in place, else added at the
    end); the other lines as they were."""
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigurationError(f"{name!r}: a name is 1 to 64 characters without spaces, colons or control characters")
    line = f"{name}:{hashed.text()}"
    kept: list[str] = []
    for old in existing.splitlines():
        if old.strip().partition(":")[0] != name or old.strip().startswith("#"):
            kept.append(old)
        elif line not in kept:  # the first of the name's lines becomes the new one; any other goes
            kept.append(line)
    if line not in kept:
        kept.append(line)
    return "\n".join(kept) + "\n"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise ValueError(text)
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
