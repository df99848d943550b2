"""The bot as a web service: ``POST /ask`` streams the answer as plain text while ragtrace traces it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from ._bot import SupportBot


class AskRequest(BaseModel):
    """Body of ``POST /ask``."""

    question: str = Field(min_length=1, max_length=4000)


def create_app(bot: SupportBot) -> FastAPI:
    """A FastAPI app serving ``bot``: ``POST /ask`` (streamed text) and ``GET /healthz``.

    The response body is the bot's async generator itself, so the RAG span ends when the client has
    read the whole answer (or disconnects, which closes the stream early and ends the span too).
    """
    app = FastAPI(title="ragtrace support bot")

    @app.post("/ask")
    async def ask(request: AskRequest) -> StreamingResponse:
        return StreamingResponse(bot.answer(request.question), media_type="text/plain; charset=utf-8")

    @app.get("/healthz")
    async def healthz() -> dict[str, object]:
        return {"status": "ok", "documents": len(bot.retriever.documents), "generator": bot.generator.name}

    return app
