"""One whole (not streamed) chat answer from a server: what the judge asks for each row."""

from __future__ import annotations

import openai

from agentworld_local.engine.remote.client import describe_error, make_client, server_facts
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.errors import ModelError


class ChatClient:
    """A served model answering whole messages; safe to share between threads."""

    def __init__(self, options: RemoteOptions) -> None:
        """Connect and check the model is served (one AwlError line otherwise)."""
        self.options = options
        self._client = make_client(options)
        served = server_facts(self._client, options).models
        if served and options.api_model not in served:
            raise ModelError(
                f"The server at {options.endpoint} does not serve the model `{options.api_model}`; it serves: "
                f"{', '.join(served[:10])}{', ...' if len(served) > 10 else ''}.",
                f"Use `--judge-model {served[0]}`.",
            )

    def complete(self, messages: list[dict[str, str]], *, temperature: float, max_tokens: int) -> str:
        """The answer's text (the server's separate reasoning, if any, is left out: only the
        verdict counts). AwlError after the client's own retries."""
        try:
            response = self._client.chat.completions.create(
                model=self.options.api_model, messages=messages, temperature=temperature, max_tokens=max_tokens,
            )
        except openai.OpenAIError as error:
            raise describe_error(error, self.options) from None
        if not response.choices:
            return ""
        return response.choices[0].message.content or ""

    def close(self) -> None:
        self._client.close()
