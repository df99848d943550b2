"""What scoring spends, shared by the metrics (a score's cost) and the judges (a reply's cost).

Its own module so that neither package imports the other to name it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Cost:
    """What scoring spent: judge calls, tokens and wall time. Costs add up with ``+``."""

    chat_calls: int = 0
    embedding_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def calls(self) -> int:
        """All judge calls, chat and embeddings."""
        return self.chat_calls + self.embedding_calls

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            chat_calls=self.chat_calls + other.chat_calls,
            embedding_calls=self.embedding_calls + other.embedding_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            seconds=self.seconds + other.seconds,
        )


ZERO_COST = Cost()
