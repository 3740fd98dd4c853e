"""One whole (not streamed) chat answer from a server: what the judge asks for each row."""

from __future__ import annotations

import openai

from agentworld_local.engine.remote.client import describe_error, json_body, make_client, not_the_api, server_facts
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
            raw = self._client.chat.completions.with_raw_response.create(
                model=self.options.api_model, messages=messages, temperature=temperature, max_tokens=max_tokens,
            )
        except openai.OpenAIError as error:
            raise describe_error(error, self.options) from None
        # Read here, not by the client: a server that answers a web page, an event stream, an
        # empty body or JSON of another shape is one ModelError naming it, never a client's error.
        response = raw.http_response
        data = json_body(response)
        choices = data.get("choices") if isinstance(data, dict) else None
        if choices == []:
            return ""  # a server that answered with no choice: the answer is empty
        first = choices[0] if isinstance(choices, list) else None
        message = first.get("message") if isinstance(first, dict) else None
        content = message.get("content", None) if isinstance(message, dict) else False
        if content is None or isinstance(content, str):
            return content or ""
        raise not_the_api(self.options, response, "/chat/completions", "answers a chat completion as JSON",
                          "no `choices` list holding a message's text")

    def close(self) -> None:
        self._client.close()
