"""The offline judge's cache of what it reads from texts: a short text is read once, a long one every time."""

from __future__ import annotations

from ragtrace.judges.offline.short_cache import CACHED_TEXT_CHARS, short_text_cache


def test_short_texts_are_read_once_and_long_ones_every_time() -> None:
    reads: list[str] = []

    @short_text_cache(maxsize=2)
    def length(text: str) -> int:
        """The text's length."""
        reads.append(text)
        return len(text)

    short, long = "a" * CACHED_TEXT_CHARS, "b" * (CACHED_TEXT_CHARS + 1)
    assert [length(short), length(short), length(long), length(long)] == [len(short), len(short), len(long), len(long)]
    assert reads == [short, long, long]
    assert length.cache_info().currsize == 1 and length.__doc__ == "The text's length."
    length("c")
    length("d")  # past maxsize: the least recently used goes
    length(short)
    assert reads[-3:] == ["c", "d", short]
    length.cache_clear()
    assert length.cache_info().currsize == 0
    length("d")
    assert reads[-1] == "d"
