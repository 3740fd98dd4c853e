"""A thin client of `awl serve` (docs/serve.md): sessions on a server, for the vector env.

One `httpx2.Client` (thread-safe, a connection pool): the vector env sends the steps of all
its sessions at once from threads, so the server has them all in flight together. A refusal
is raised as the server words it (`InputError` with its hint); an invalid action is an
`ActionError`, which an env turns into an observation the agent can read.
"""

from __future__ import annotations

from typing import Any

import httpx2

from agentworld_local.errors import ActionError, AwlError, InputError


class ServerError(AwlError):
    """The server could not be reached, or failed (5xx)."""


class ServerClient:
    """Sessions on one `awl serve` at `base_url` (e.g. http://127.0.0.1:8760)."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 600.0, connections: int = 64) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url.rstrip("/")
        self._http = httpx2.Client(base_url=self.base_url, headers=headers, timeout=timeout,
                                   limits=httpx2.Limits(max_connections=connections, max_keepalive_connections=connections))

    def create(self, **session: Any) -> dict[str, Any]:
        """A new session: `domain` or `scenario`, and the session's options (task, seed, think, ...)."""
        return self._call("POST", "/sessions", json={key: value for key, value in session.items() if value is not None})

    def step(self, sid: str, action: str, *, final: bool = False) -> dict[str, Any]:
        """`final`: the episode's last step (a reward that judges episodes judges it)."""
        return self._call("POST", f"/sessions/{sid}/step", json={"action": action, **({"final": True} if final else {})})

    def undo(self, sid: str) -> dict[str, Any]:
        return self._call("POST", f"/sessions/{sid}/undo")

    def resume(self, sid: str) -> dict[str, Any]:
        return self._call("POST", f"/sessions/{sid}/resume")

    def state(self, sid: str) -> dict[str, Any]:
        return self._call("GET", f"/sessions/{sid}")

    def close_session(self, sid: str) -> dict[str, Any]:
        return self._call("DELETE", f"/sessions/{sid}")

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **options: Any) -> Any:
        try:
            response = self._http.request(method, path, **options)
        except httpx2.HTTPError as error:
            raise ServerError(f"Cannot reach awl serve at {self.base_url} ({type(error).__name__}: {error}).",
                              "Start it with `awl serve --model ...`, or check the address.") from None
        if response.status_code < 400:
            return response.json()
        try:
            body = response.json()
            message, hint = str(body.get("error", response.text)), str(body.get("hint", ""))
        except ValueError:
            body, message, hint = {}, response.text or response.reason_phrase, ""
        if response.status_code == 422 and body.get("invalid_action"):
            raise ActionError(message, hint)
        if response.status_code >= 500:
            raise ServerError(f"awl serve failed: {message}", hint or "See the server's output.")
        raise InputError(message, hint)
