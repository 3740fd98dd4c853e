"""The agent in the TUI: an agent model proposes each action into the action line.

The episode loop is the core's (agent/episode.py), run on a thread of its own so the UI
never waits for the agent model: each proposal streams into a line above the action input,
then stands in the input for the user to approve (Enter), edit, or replace; `ctrl+l` lets the
agent run on its own from there; Escape stops the agent (mid-proposal too). Each action goes
to the runner like a typed one, with the agent side recorded in its turn.

The agent's history is the session's current branch, as the runner's latest view says it
(`BranchHistory`): the user's own actions, undos and regenerates are in it as they are in the
file. The loop goes on to its next proposal once its turn's command has ended (its Ready, with
the view that holds the turn, has reached the screen).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.css.query import NoMatches
from textual.widgets import Static

from agentworld_local.agent import AgentHistory, Episode, EpisodeEnd, Proposal, run_episode
from agentworld_local.agent.episode import AUTO, DEFAULT_STEPS, STOP, AgentStep, Decision, judged
from agentworld_local.agent.prompt import identity_label
from agentworld_local.domains.base import Action
from agentworld_local.errors import Cancelled
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.trajectory.schema import TurnRecord

#: What the loop thread waits for from the UI: a decision, or a turn's observation (None: no turn).
_STOPPED = object()


class BranchHistory(AgentHistory):
    """What the agent has seen: the session's current branch, as the runner's latest view
    says it (`follow`, on the UI thread, with each Ready's branch), never a copy kept by hand.
    The episode's `observed()` appends to a list made for it alone: the turn reaches the history
    with its command's view."""

    _turns: tuple[tuple[str, str], ...] = ()

    @property  # type: ignore[override]
    def turns(self) -> list[tuple[str, str]]:
        return list(self._turns)

    @turns.setter
    def turns(self, turns: list[tuple[str, str]]) -> None:  # the dataclass's __init__
        self._turns = tuple(turns)

    def follow(self, branch: Sequence[TurnRecord]) -> None:
        """The session's branch now (one reference swapped: the loop's thread reads it whole)."""
        self._turns = tuple((record.action, record.observation) for record in branch)

    def still(self) -> AgentHistory:
        """The history as it is now, for one proposal (a view that comes meanwhile waits for the next)."""
        return AgentHistory(self.domain, self.task, self.initial_state, list(self._turns))


class _ProposesOnTheBranch:
    """The agent, asked for each proposal with the branch as it is when the proposal starts."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    def propose(self, history: BranchHistory, **options: Any) -> Proposal:
        return self.agent.propose(history.still(), **options)


class ProposalLine(Static):
    """The agent's words as they stream, and what it waits for."""

    def show(self, text: str, style: str = "italic") -> None:
        self.update(Text(safe_for_terminal(text, keep_colour=False), style=style))
        self.display = bool(text)


class AgentLoop:
    """One episode driven from a session screen (see the module's doc). `screen` is the
    SessionScreen: the loop calls its `agent_*` hooks on the UI thread."""

    def __init__(self, screen: Any, agent: Any, *, steps: int) -> None:
        self.screen = screen
        self.agent = agent
        self.letting_run = False
        self.proposal: Proposal | None = None  # the one waiting for the user, if any
        self.cancel = threading.Event()
        self._decisions: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._observations: queue.SimpleQueue[Any] = queue.SimpleQueue()
        view = screen.view
        self.history = BranchHistory(view.domain, view.settings.task, view.initial_state)
        self.history.follow(screen.branch)
        self.episode = Episode(_ProposesOnTheBranch(agent), self.history, steps=steps, review=self._review,
                               on_text=self._streamed)
        self.end: EpisodeEnd | None = None
        self._streamed_text = ""
        self._thread = threading.Thread(target=self._run, name="awl-agent-loop", daemon=True)

    @property
    def label(self) -> str:
        return identity_label(self.agent.identity)

    def start(self) -> None:
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    # -- from the UI thread ---------------------------------------------------------------

    def submit(self, action: Action) -> None:
        """The user pressed Enter on the proposal (as it is, edited, or replaced)."""
        proposal, self.proposal = self.proposal, None
        if proposal is not None:
            self._decisions.put(judged(proposal, action))

    def let_run(self) -> None:
        """From now on every proposal runs as proposed (the one waiting too)."""
        self.letting_run = True
        proposal, self.proposal = self.proposal, None
        if proposal is not None and proposal.action is not None:
            self._decisions.put(Decision(AUTO, proposal.action))

    def follow(self, branch: Sequence[TurnRecord]) -> None:
        """The session's view after a command: the agent's history is its branch."""
        self.history.follow(branch)

    def turn_finished(self, observation: str) -> None:
        self._observations.put(observation)

    def turn_failed(self) -> None:
        self._observations.put(_STOPPED)

    def stop(self) -> None:
        """Esc: the proposal in progress stops at its next token; nothing more is proposed."""
        self.cancel.set()
        self.proposal = None
        self._decisions.put(Decision(STOP))
        self._observations.put(_STOPPED)

    # -- on the loop's thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            end = run_episode(self.episode, self._step_world, cancel=self.cancel)
        except Cancelled:
            end = self.episode.stop("The agent stopped: its turn did not finish.")
        except Exception as error:  # the agent model failed (a server gone): said, the session goes on
            end = self.episode.stop(f"The agent stopped: {getattr(error, 'message', error)}")
        self.end = end
        self._to_ui(self.screen.agent_ended, end)

    def _streamed(self, piece: str, ask: int) -> None:
        if ask > 1 and not self._streamed_text.startswith("(asked again) "):
            self._streamed_text = "(asked again) "
        self._streamed_text += piece
        self._to_ui(self.screen.agent_streaming, self._streamed_text)

    def _review(self, proposal: Proposal) -> Decision:
        self._streamed_text = ""
        assert proposal.action is not None
        if self.letting_run or self.cancel.is_set():
            return Decision(STOP) if self.cancel.is_set() else Decision(AUTO, proposal.action)
        self._to_ui(self.screen.agent_proposed, proposal)  # it becomes `self.proposal` there, on the UI thread
        return self._decisions.get()

    def _step_world(self, step: AgentStep) -> str:
        self._to_ui(self.screen.agent_step, step)
        observation = self._observations.get()
        if observation is _STOPPED:
            raise Cancelled("The turn did not finish.", "")
        return observation

    def _to_ui(self, callback: Any, *args: Any) -> None:
        try:
            self.screen.app.call_from_thread(callback, *args)
        except (RuntimeError, NoMatches):  # the app or the screen's widgets are gone (a quit): nothing to show
            self.cancel.set()


class AgentHooks:
    """The session screen's side of the agent loop (mixed into SessionScreen): what the loop
    shows, and how Enter, Escape and `ctrl+l` reach it. Inert when the app has no agent."""

    agent_loop: AgentLoop | None = None

    def agent_start(self) -> None:
        agent = getattr(self.app, "agent", None)  # type: ignore[attr-defined]
        if agent is None:
            return
        self.agent_loop = AgentLoop(self, agent, steps=getattr(self.app, "agent_steps", DEFAULT_STEPS))  # type: ignore[attr-defined]
        self._proposal_line().show(f"{self.agent_loop.label} is proposing the first action…  (Esc stops the agent)")
        self.agent_loop.start()

    def _proposal_line(self) -> ProposalLine:
        return self.query_one("#agent-proposal", ProposalLine)  # type: ignore[attr-defined]

    def on_unmount(self) -> None:
        """The screen goes (a quit, a fork): its loop stops; the app closes the agent model."""
        if self.agent_loop is not None:
            self.agent_loop.stop()

    @property
    def agent_running(self) -> bool:
        return self.agent_loop is not None and self.agent_loop.running

    def agent_take(self, action: Action) -> bool:
        """Enter on the action line: True when it answered the agent's proposal."""
        loop = self.agent_loop
        if loop is None or loop.proposal is None:
            return False
        loop.submit(action)
        return True

    def agent_follow(self, branch: Sequence[TurnRecord]) -> None:
        """The session's view after a command (any command, the user's own too)."""
        if self.agent_loop is not None:
            self.agent_loop.follow(branch)

    def agent_turn_ended(self, finished: Any) -> None:
        """The command of the agent's action ended (its Ready, after the view that holds the
        turn): its TurnFinished, or None (cancelled, dropped, failed)."""
        loop = self.agent_loop
        if loop is None:
            return
        if finished is None:
            loop.turn_failed()
        else:
            loop.turn_finished(finished.record.observation)

    def agent_stop(self) -> bool:
        """Escape: True when there was an agent to stop."""
        loop = self.agent_loop
        if loop is None or not loop.running:
            return False
        loop.stop()
        self._proposal_line().show("The agent was stopped; type actions yourself.", style="dim")
        return True

    def action_let_agent_run(self) -> None:
        loop = self.agent_loop
        if loop is not None and loop.running:
            loop.let_run()
            self.query_one("#action").value = ""  # type: ignore[attr-defined]
            self.notify("The agent runs on its own now (Esc stops it).")  # type: ignore[attr-defined]

    # -- called by the loop, on the UI thread ---------------------------------------------

    def agent_streaming(self, text: str) -> None:
        self._proposal_line().show(f"{self.agent_loop.label if self.agent_loop else 'agent'}: {' '.join(text.split())}")

    def agent_proposed(self, proposal: Proposal) -> None:
        assert proposal.action is not None
        if self.agent_loop is None or self.agent_loop.cancel.is_set():
            return  # stopped meanwhile: the user types their own actions now
        self.agent_loop.proposal = proposal
        field = self.query_one("#action")  # type: ignore[attr-defined]
        field.value = proposal.action.text
        field.cursor_position = len(field.value)
        field.focus()
        self._proposal_line().show("The agent proposes this action: Enter runs it; edit or replace it first if you "
                                   "like; ctrl+l lets the agent run; Esc stops it.")

    def agent_step(self, step: AgentStep) -> None:
        self.query_one("#action").value = ""  # type: ignore[attr-defined]
        self._proposal_line().show(f"agent ({step.record['decision']}): {' '.join(step.action.text.split())}", style="dim")
        def send() -> Any:
            return self.runner.step(self.view.id, step.action, agent=step.record)  # type: ignore[attr-defined]

        # Behind what runs, if anything does (the user's own action): the runner keeps the order.
        if not self._send("turn", send, agent=True):  # type: ignore[attr-defined]
            self.agent_turn_ended(None)

    def agent_ended(self, end: EpisodeEnd) -> None:
        self._proposal_line().show(end.message, style="dim")
        self.notify(end.message, timeout=6)  # type: ignore[attr-defined]
