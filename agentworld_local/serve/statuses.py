"""One mapping from what went wrong to an HTTP status, for both HTTP apps (`awl serve`'s REST
API and `awl serve --openenv`): the same failure answers the same status on either."""

from __future__ import annotations

from agentworld_local.errors import ActionError, AwlError, BackendBusy, Cancelled, GenerationError, InputError, TrajectoryError
from agentworld_local.session.runner.mailbox import BY_CLOSING

#: A command cancelled by a client (409: send it again) and one stopped because the server stops (503).
CANCELLED, SHUTTING_DOWN = 409, 503


def status_of(error: BaseException) -> int:
    """The client's mistake (4xx) or the server's (5xx):
    - an action the domain cannot read: 422; any other bad input: 400;
    - cancelled: 409 by a client, 503 when the server is shutting down;
    - the model's place or its server cannot take it now: 503; a model server that failed: 502;
    - anything else awl says (not in the session's state now: a full context, a reward hook
      that failed after its turn was saved): 409;
    - a saved file that cannot be written or read, or an unexpected error: 500."""
    if isinstance(error, ActionError):
        return 422
    if isinstance(error, Cancelled):
        return SHUTTING_DOWN if error.by == BY_CLOSING else CANCELLED
    if isinstance(error, BackendBusy):
        return 503
    if isinstance(error, GenerationError):
        return 502
    if isinstance(error, InputError):
        return 400
    if isinstance(error, AwlError) and not isinstance(error, TrajectoryError):
        return 409
    return 500
