"""`awl run --agent SPEC`: an agent model proposes each action, the world model answers.

The episode loop is the core's (agent/episode.py); here its steps become the session loop's
lines (cli/session_loop.play_lines), so signals, saving and the last words are a script's.
With `--approve` each proposal is asked about at the terminal: run it, edit it, replace it,
let the agent run, or quit.
"""

from __future__ import annotations

import dataclasses

import sys
from collections.abc import Callable, Iterator
from typing import Any

from agentworld_local.agent import AgentHistory, Episode, Proposal
from agentworld_local.agent.episode import AUTO, APPROVED, DEFAULT_STEPS, STOP, UNREADABLE, Decision, judged
from agentworld_local.agent.model_agent import ModelAgent, check_agent_spec
from agentworld_local.agent.prompt import identity_label
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.session_loop import play_lines, say_notice
from agentworld_local.cli.turn_output import ScriptLine, TurnPrinter
from agentworld_local.domains.base import Domain
from agentworld_local.engine import events
from agentworld_local.errors import AwlError, InputError
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.terminal_text import safe_for_terminal

CHOICES = "[y] run it  [e] edit  [r] replace  [a] let it run  [q] quit"


def check_agent_options(agent: str | None, steps: int | None, approve: bool, conflicts: dict[str, Any],
                        key_env: str | None = None) -> int:
    """The agent options, checked before any model loads; the step limit."""
    if agent is None:
        given = ("--agent-steps" if steps is not None else "--approve" if approve else
                 "--agent-key-env" if key_env is not None else None)
        if given:
            raise InputError(f"{given} only works with --agent.", "Add `--agent openai:MODEL@URL` or `--agent PATH.gguf`.")
        return DEFAULT_STEPS
    other = next((name for name, value in conflicts.items() if value), None)
    if other:
        raise InputError(f"--agent proposes every action itself; {other} cannot go with it.", f"Drop {other}, or --agent.")
    if steps is not None and steps < 1:
        raise InputError(f"--agent-steps {steps} must be at least 1.", "E.g. `--agent-steps 10`.")
    if approve and not sys.stdin.isatty():
        raise InputError("--approve asks about each proposal at a terminal, and stdin is not one.",
                         "Run it in a terminal, or drop --approve to let the agent run.")
    try:
        check_agent_spec(agent, key_env)
    except AwlError as error:
        raise InputError(f"--agent: {error.message}", error.hint) from None
    return steps or DEFAULT_STEPS


def load_agent(spec: str, load: dict[str, Any], key_env: str | None = None) -> ModelAgent:
    """The agent model, on its own thread (a second GGUF, a server, a scripted model)."""
    options = {key: load[key] for key in ("gpu_layers", "threads", "verbose") if key in load}
    agent = ModelAgent(spec, load_options=options, notice=lambda text: say_notice(f"agent model: {text}"), key_env=key_env)
    if not load.get("quiet"):
        stderr_console().print(f"awl: the agent is {safe_for_terminal(identity_label(agent.identity))}",
                               markup=False, style="dim")
    return agent


def run_agent_session(runner: SessionRunner, new: NewSession, agent: ModelAgent, *, steps: int,
                      approve: bool, printer: TurnPrinter) -> int:
    """Open the session, let the agent act for up to `steps` turns, close it (play_lines's rules)."""
    new = dataclasses.replace(new, agent=agent.identity)  # the rest as given: its reward included
    history = AgentHistory(new.domain, new.settings.task)
    review = TerminalReview(new.domain) if approve else None
    episode = Episode(agent, history, steps=steps, review=review)
    seen = _Observations()
    return play_lines(runner, lambda: runner.open(new), agent_lines(episode, seen, printer), printer=printer,
                      on_event=seen)


class _Observations:
    """The observation of the last finished turn, from the session's events."""

    def __init__(self) -> None:
        self.last: str | None = None
        self.initial_state: str | None = None

    def __call__(self, event: events.SessionEvent) -> None:
        if isinstance(event, events.TurnFinished):
            self.last = event.record.observation
        elif isinstance(event, events.SessionOpened) and event.view is not None:
            self.initial_state = event.view.initial_state  # a scenario's, or the domain's


def agent_lines(episode: Episode, seen: _Observations, printer: TurnPrinter) -> Iterator[ScriptLine]:
    """The episode's steps as the session loop's lines; the observation of each is read
    before the next is asked for. An answer that never parses ends the run as an error."""
    if seen.initial_state is not None:
        episode.history.initial_state = seen.initial_state
    number = 0
    while (step := episode.next_step()) is not None:
        number += 1
        seen.last = None
        yield ScriptLine(number, step.action, agent=step.record, final=number >= episode.steps)
        if seen.last is None:  # the turn did not finish: the agent does not go on blind
            episode.stop("The turn did not finish, so the agent stopped.")
            break
        episode.observed(seen.last)
    end = episode.end
    assert end is not None
    if end.reason == UNREADABLE:
        raise AwlError(end.message, "Try another --agent model, or give the actions yourself (a script or stdin).")
    printer.notice(f"agent: {end.message}")


def _prefilled_input(prompt: str, text: str) -> str:
    """input() with `text` already typed (readline's startup hook), where readline exists."""
    try:
        import readline
    except ImportError:
        return input(prompt) or text
    readline.set_startup_hook(lambda: readline.insert_text(text))
    try:
        return input(prompt)
    finally:
        readline.set_startup_hook()


class TerminalReview:
    """Asks about each proposal at the terminal (`--approve`)."""

    def __init__(self, domain: Domain, *, ask: Callable[[str], str] = input,
                 edit: Callable[[str, str], str] = _prefilled_input) -> None:
        self.domain = domain
        self.ask = ask
        self.edit = edit
        self.letting_run = False

    def __call__(self, proposal: Proposal) -> Decision:
        assert proposal.action is not None
        if self.letting_run:
            return Decision(AUTO, proposal.action)
        err = stderr_console()
        err.print(f"agent proposes: {safe_for_terminal(proposal.action.text)}", markup=False, style="bold")
        while True:
            try:
                choice = self.ask(f"{CHOICES}: ").strip().lower()[:1] or "y"
                if choice == "y":
                    return Decision(APPROVED, proposal.action)
                if choice == "a":
                    self.letting_run = True
                    return Decision(APPROVED, proposal.action)
                if choice == "q":
                    return Decision(STOP)
                if choice in ("e", "r"):
                    typed = self.edit("action> ", proposal.action.text if choice == "e" else "")
                    return judged(proposal, self.domain.parse_action(typed))
            except EOFError:
                return Decision(STOP)
            except AwlError as error:  # an edit the domain cannot read: say why and ask again
                err.print(f"awl: {safe_for_terminal(error.one_line())}", markup=False)
                continue
            err.print(f"awl: answer one of {CHOICES}", markup=False)
