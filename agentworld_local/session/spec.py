"""What a user may choose for a new session, and the one set of rules that merges it.

`SessionSpec.resolve()` merges defaults < scenario < explicit options: a field left as None
keeps the scenario's value (or the default); controls add to the scenario's. Every face
(`awl run`, `awl demo`, the TUI) builds a spec and resolves it, so the errors are the same
everywhere. The messages name the CLI options, which the TUI's fields mirror.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_local.config import load_config
from agentworld_local.defaults import DEFAULT_MAX_TOKENS, DEFAULT_SEED, DEFAULT_TEMPERATURE
from agentworld_local.domains import get_domain
from agentworld_local.domains.base import Domain
from agentworld_local.domains.packs import prompt_from_pack
from agentworld_local.engine.prompt_composition import compose_system_prompt, with_session_tools
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import InputError, a_or_an
from agentworld_local.scenarios import load_scenario
from agentworld_local.scenarios.schema import Scenario
from agentworld_local.session.sampling import check_sampling
from agentworld_local.worlds.names import check_world_name

#: The domain of a session that names neither a domain nor a scenario.
DEFAULT_DOMAIN = "terminal"


@dataclass
class ResolvedSpec:
    """A spec merged and checked: what `Session.create` needs besides the backend."""

    domain: Domain  # built with the session's tools and state format
    settings: SessionSettings
    scenario: Scenario | None = None
    #: The config file that chose the prompt pack (no `--prompts` given): faces say so.
    prompts_from_config: Path | None = None

    @property
    def scenario_ref(self) -> dict[str, Any] | None:
        """What the trajectory header records about the scenario."""
        return self.scenario.ref() if self.scenario else None


@dataclass
class SessionSpec:
    """Everything a user may choose for a new session; None means "not given"."""

    domain: str | None = None
    scenario: str | None = None  # a name from `awl scenarios list`, or a .toml path
    task: str | None = None
    initial_state: str | None = None  # the text (a face reads the file)
    controls: list[str] = field(default_factory=list)  # added to the scenario's
    tools: list[dict[str, Any]] | None = None  # replace the scenario's
    world: str | None = None  # a fictional-world description; replaces the scenario's
    state_format: str | None = None  # web: axtree or html
    temperature: float = DEFAULT_TEMPERATURE
    max_tokens: int = DEFAULT_MAX_TOKENS
    think: str | None = None  # None: the default budget (defaults.DEFAULT_THINK)
    seed: int = DEFAULT_SEED
    #: A prompt pack: a directory laid out like the official `prompts/` (domains/packs.py).
    prompts: Path | None = None
    #: The shared world to join by name (worlds/); None: the session imagines its own.
    shared_world: str | None = None

    def check(self) -> ThinkBudget:
        """What can be refused without reading any file: thinking, sampling, text. Returns the budget."""
        budget = ThinkBudget.parse(self.think)
        check_sampling(max_tokens=self.max_tokens, temperature=self.temperature)
        for name, text in (("--task", self.task), *(("--control", text) for text in self.controls)):
            check_text(name, text)
        if self.shared_world is not None:
            self.shared_world = check_world_name(self.shared_world)
        return budget

    def resolve(self) -> ResolvedSpec:
        """Merge defaults < scenario < options; raises InputError (one line and a hint)."""
        budget = self.check()
        chosen = load_scenario(self.scenario) if self.scenario else None
        if chosen and self.domain and self.domain != chosen.domain:
            raise InputError(
                f"--domain {self.domain} conflicts with scenario `{chosen.name}`, which is {a_or_an(chosen.domain)} world.",
                f"Drop --domain, or pick {a_or_an(self.domain)} scenario: `awl scenarios list --domain {self.domain}`.",
            )
        domain_name = self.domain or (chosen.domain if chosen else DEFAULT_DOMAIN)
        sampling = SamplingConfig(temperature=self.temperature, max_tokens=self.max_tokens)
        settings = SessionSettings(sampling=sampling, think=budget, seed=self.seed, shared_world=self.shared_world)
        if chosen is not None:
            settings = chosen.apply(settings)
            if self.think is not None:  # --think overrides the scenario's own budget
                settings.think = budget
        if self.task is not None:
            settings.task = self.task
        if self.initial_state is not None:
            settings.initial_state = self.initial_state
        if self.world is not None:
            settings.world_description = self.world
        if self.tools is not None:
            settings.tools = self.tools
        if any(not text.strip() for text in self.controls):
            raise InputError("--control needs a text.", 'Write e.g. `--control "the disk is full"`.')
        settings.controls = [*settings.controls, *(text.strip() for text in self.controls)]
        # Built with the session's tools, so actions are checked against them before loading.
        domain = with_session_tools(get_domain(domain_name, state_format=self.state_format), settings.tools)
        if self.state_format is not None and getattr(domain, "state_format", self.state_format) != self.state_format:
            domain = get_domain(domain_name, tools=settings.tools, state_format=self.state_format)
        prompts, from_config = self.prompts, None
        if prompts is None:  # the config file's pack, when it names one
            config = load_config()
            prompts, from_config = config.prompts, config.source if config.prompts else None
        if prompts is not None:  # the pack's text, filled with this session's tools
            try:
                text, settings.prompt_pack = prompt_from_pack(prompts, domain)
            except InputError as error:
                if from_config is not None:  # the user gave no --prompts: say where it came from
                    error.message = f"{error.message.rstrip('.')} (the pack is set in {from_config})."
                    error.hint = f"{error.hint or ''} Or give `--prompts DIR`, or remove `prompts` from {from_config}.".strip()
                raise
            settings.system_prompt = compose_system_prompt(text, world=settings.world_description)
        return ResolvedSpec(domain=domain, settings=settings, scenario=chosen, prompts_from_config=from_config)


def check_text(name: str, value: str | None) -> None:
    """Text from a command line may hold bytes that are not UTF-8 (Python keeps them as lone
    surrogates); they would fail much later, inside the tokenizer."""
    if value is None:
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as problem:
        raise InputError(
            f"{name} holds bytes that are not UTF-8 text (at character {problem.start + 1}).",
            "Set your terminal to UTF-8, or pass the text in a UTF-8 file.",
        ) from None
