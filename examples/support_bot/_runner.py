"""Asking the bot many questions in a row, as the demo and the end-to-end check do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ._bot import SupportBot, ask


@dataclass(frozen=True, slots=True)
class Answer:
    """One question asked and what came back."""

    index: int
    question: str
    expected: str
    answer: str
    degraded: bool

    @property
    def correct(self) -> bool:
        """True when the known short answer appears in the bot's answer (case-insensitive)."""
        return self.expected.casefold() in self.answer.casefold()


async def run_questions(
    bot: SupportBot, count: int, *, on_answer: Callable[[Answer], None] | None = None
) -> list[Answer]:
    """Ask ``count`` shipped questions one after the other (cycling through the set) and collect the answers."""
    answers: list[Answer] = []
    for _ in range(count):
        index = bot.asked
        question = bot.question(index)
        text = await ask(bot, question.text)
        answer = Answer(
            index=index,
            question=question.text,
            expected=question.answer,
            answer=text,
            degraded=bot.degrade.degraded(index),
        )
        answers.append(answer)
        if on_answer is not None:
            on_answer(answer)
    return answers
