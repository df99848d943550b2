"""Properties of capture that must hold for any input: bounds, markers, never raising."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtrace import semconv
from ragtrace._capture import REDACT_MARGIN, CaptureSettings, export_text, prepare_text
from ragtrace._chunks import _item, _one, normalize_chunks, to_text

MARKER = semconv.TRUNCATION_MARKER


def _released() -> memoryview:
    view = memoryview(b"gone")
    view.release()
    return view


leaf = st.one_of(
    st.none(),
    st.builds(_released),
    st.text(max_size=50),
    st.binary(max_size=50),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
)
values: st.SearchStrategy[Any] = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.tuples(inner, inner),
        st.dictionaries(st.sampled_from(["text", "content", "page_content", "id", "score", "metadata", "x"]), inner),
    ),
    max_leaves=20,
)
limits = st.builds(
    CaptureSettings,
    max_attribute_length=st.integers(1, 40),
    max_record_chunk_length=st.integers(1, 40),
    max_record_chunks=st.integers(0, 4),
)


@settings(max_examples=300, deadline=None)
@given(value=values, capture=limits)
def test_normalisation_never_raises_and_respects_every_bound(value: Any, capture: CaptureSettings) -> None:
    normalized = normalize_chunks(value, capture)
    assert len(normalized.chunks) <= capture.max_record_chunks
    assert normalized.total >= len(normalized.chunks)
    for captured in normalized.chunks:
        assert isinstance(captured.chunk.text, str)
        assert len(captured.chunk.text) <= capture.keep_length
        assert captured.chunk.score is None or isinstance(captured.chunk.score, float)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=120), capture=limits)
def test_export_is_cut_and_marked_exactly_when_something_is_missing(text: str, capture: CaptureSettings) -> None:
    kept, cut = prepare_text(text, capture)
    assert text.startswith(kept)
    assert cut == (len(text) > capture.keep_length)
    exported, truncated = export_text(kept, cut, capture.max_attribute_length)
    if len(text) <= capture.max_attribute_length:
        assert (exported, truncated) == (text, False)
    else:
        assert truncated
        assert exported == text[: capture.max_attribute_length] + MARKER


@given(data=st.binary(max_size=200), limit=st.integers(1, 50))
def test_bytes_decode_to_the_same_prefix_as_a_full_decode(data: bytes, limit: int) -> None:
    full = data.decode("utf-8", errors="replace")
    assert to_text(data, limit) == full[:limit]


# Redaction of a text cut before the hook: a secret is "<digits>", filler has no "<" and no digit, so
# any "<" or digit in what is kept is (part of) a secret the hook did not see whole.
_SECRET = re.compile(r"<\d*>")
_filler = st.text(alphabet="ab .", min_size=1, max_size=400)
_secret = st.integers(0, REDACT_MARGIN - 2).map(lambda n: "<" + "7" * n + ">")  # fits in the margin


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.one_of(_filler, _secret), min_size=1, max_size=12),
    keep=st.integers(1, 64),
    placeholder=st.sampled_from(["", "#", "[secret]"]),
)
def test_no_fragment_of_a_secret_is_kept_whatever_the_hook_removes(
    pieces: list[str], keep: int, placeholder: str
) -> None:
    capture = CaptureSettings(
        max_attribute_length=keep, max_record_chunk_length=keep, redact=lambda t: _SECRET.sub(placeholder, t)
    )
    text = "".join(pieces)
    kept, cut = prepare_text(text, capture)
    assert "<" not in kept and "7" not in kept
    assert len(kept) <= keep
    if not cut:
        assert kept == _SECRET.sub(placeholder, text)


def test_the_reviewers_e_mail_is_not_kept_half_redacted() -> None:
    # 1901 addresses shrink by 15 characters each: far more than the margin before the first cut,
    # where the last address is split in two.
    capture = CaptureSettings(redact=lambda t: re.sub(r"[\w.]+@\w+\.com", "[email]", t))
    text = "From: user@example.com said hello. " * 1901 + " john.doe.private@example.com rest"
    kept, cut = prepare_text(text, capture)
    assert cut
    assert "john" not in kept and "@" not in kept
    assert kept.startswith("From: [email] said hello. From: [email]")


_ID_OR_TEXT = st.one_of(st.none(), st.text(max_size=40), st.integers(), st.binary(max_size=8))
_SCORES = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.booleans())


@settings(max_examples=300)
@given(
    text=_ID_OR_TEXT,
    chunk_id=_ID_OR_TEXT,
    score=_SCORES,
    metadata=st.one_of(st.none(), st.just({}), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
    limit=st.integers(min_value=1, max_value=50),
    redact=st.booleans(),
)
def test_the_plain_dict_fast_path_reads_a_chunk_as_the_general_path_does(
    text: Any, chunk_id: Any, score: Any, metadata: Any, limit: int, redact: bool
) -> None:
    # The decorators read the common {"text", "id", "score"} dict without the general path's calls;
    # whatever the dict holds, the chunk must come out the same.
    capture = CaptureSettings(
        max_attribute_length=limit, max_record_chunk_length=limit, redact=str.upper if redact else None
    )
    item = {"text": text, "id": chunk_id, "score": score, "metadata": metadata}
    assert _item(item, capture) == _one(item, capture)


@pytest.mark.parametrize("score", [float("nan"), float("inf"), -float("inf"), True, 1, "0.5", 0.25, None])
@pytest.mark.parametrize("chunk_id", [None, "doc-1", "x" * 20, 7, b"id"])
def test_the_plain_dict_fast_path_on_the_edge_values(score: Any, chunk_id: Any) -> None:
    capture = CaptureSettings(max_attribute_length=10)
    item = {"text": "some text", "id": chunk_id, "score": score}
    assert _item(item, capture) == _one(item, capture)


def test_the_plain_dict_fast_path_never_raises_on_an_unreadable_value() -> None:
    # Reading {"text": ..., "metadata": <released memoryview>} asks the memoryview for its truth value,
    # which raises: the chunk is still recorded, never raised into the app.
    capture = CaptureSettings()
    for item in ({"text": "some text", "metadata": _released()}, {"text": "t", "id": "a", "score": _released()}):
        (captured,) = normalize_chunks([item], capture).chunks
        assert captured.chunk.text
