"""What may change when a saved session goes on, and with which model: one set of rules for
every face (`awl run --resume`, `awl play --resume`, the TUI's start screen, the runner).

What defines the world (domain, task, tools, system prompt, prompt pack, starting state)
never changes: it is the header's, and a different world is a new session (`awl fork`).
Sampling that does not define the world (temperature, max tokens, thinking, the seed of new
turns) may change; each new turn records where its settings differ from the header's
(`TurnRecord.settings`), and a later resume goes on from the last turn's settings.

The model: a session goes on with the model its last turn was made with (the header's,
unless a turn records another). A different file (size first, then the hash the header
records, both cheap before a load) is refused, unless the user allows it on purpose; then
each new turn records its model (`TurnRecord.model`). `Session.resume` checks the loaded
backend again, so no face can skip the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.errors import InputError, TrajectoryError
from agentworld_local.models.units import format_bytes
from agentworld_local.engine.loading import SCRIPTED
from agentworld_local.session.sampling import check_sampling, saved_settings
from agentworld_local.trajectory.reader import Trajectory, read_trajectory
from agentworld_local.trajectory.schema import Header, ModelRef
from agentworld_local.trajectory.writer import TrajectoryWriter

#: The option that lets a session go on with another model on purpose.
ALLOW_OTHER_MODEL = "--allow-other-model"


@dataclass(frozen=True)
class ResumeOptions:
    """What a face may change when a session goes on; None keeps the saved value."""

    model: str | None = None  # a registry name, a GGUF path or scripted:FILE (None: the file's model)
    #: A model on a server (engine/remote/options.RemoteOptions), given instead of `model`.
    remote: Any = None
    allow_other_model: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    think: str | None = None
    seed: int | None = None

    def check(self) -> None:
        """Refuse a bad value before anything is read or loaded."""
        given = {"max_tokens": self.max_tokens, "temperature": self.temperature}
        check_sampling(**{key: value for key, value in given.items() if value is not None})
        if self.think is not None:
            ThinkBudget.parse(self.think)


@dataclass(frozen=True)
class ResumePlan:
    """A saved session checked for going on: what to load, and the settings of the new turns."""

    path: Path
    header: Header
    model: str | None  # what to load: the model given, or the one the session was made with (None: `remote`)
    made_with: ModelRef | None  # the model of the last turn on the branch (the header's by default)
    options: ResumeOptions


def plan_resume(path: str | Path, options: ResumeOptions | None = None) -> ResumePlan:
    """Everything about a resume that can be checked before a model loads.

    A damaged file is refused (with the `awl fork` command that saves its intact turns), an
    unfinished last line (a process killed mid-write) is cut off, a bad option or a different
    model file (unless allowed) is refused. Raises AwlError, each naming the next step.
    """
    options = options or ResumeOptions()
    options.check()
    path = Path(path)
    traj = read_trajectory(path)
    TrajectoryWriter.append_to(path, traj).close()  # refuses a damaged file, cuts an unfinished line
    made_with = last_model(traj)
    if options.remote is not None:
        model = None
        same = _served(made_with) and made_with.name == options.remote.api_model
        if made_with is not None and not options.allow_other_model and not same:
            raise _other_model(made_with, f"the server model {options.remote.api_model}", path)
    else:
        model = options.model or model_to_load(made_with, path)
        if not options.allow_other_model:
            check_model_file(made_with, model, path)
    resumed_settings(traj, options)  # the header's settings must be usable
    return ResumePlan(path=path, header=traj.header, model=model, made_with=made_with, options=options)


def last_model(traj: Trajectory) -> ModelRef | None:
    """The model the session's last turn on its branch was made with."""
    for record in reversed(traj.current_branch()):
        if record.model is not None:
            return record.model
    return traj.header.model


def model_to_load(ref: ModelRef | None, path: Path) -> str:
    """The `--model` value that loads the model a session was made with."""
    if ref is None:
        raise InputError(f"{path} does not say which model made it.", "Give the model with `--model`.")
    if _served(ref):  # the one-text form of a server model (`openai:NAME@URL`); a key comes from the environment
        from agentworld_local.engine.remote.options import SPEC_PREFIX

        return f"{SPEC_PREFIX}{ref.name}@{ref.extra['endpoint']}"
    if ref.name.startswith(SCRIPTED) and ref.path:
        return SCRIPTED + ref.path
    if ref.path and Path(ref.path).expanduser().is_file():
        return ref.path
    if ref.path is None or Path(ref.path).name != ref.name:
        return ref.name  # a registry name (`name:QUANT`): the registry finds its file
    raise InputError(
        f"{path} was made with {ref.path}, which is not there any more.",
        f"Give that model with `--model PATH`, or another one with `--model PATH {ALLOW_OTHER_MODEL}`.",
    )


def check_model_file(ref: ModelRef | None, model: str, path: Path) -> None:
    """Before a load: refuse a model file that is not the one the session was made with (a
    GGUF's size first, then the hash of the part the header records; scripted answers, which
    load in no time, by their hash once read)."""
    if ref is None:
        return
    from agentworld_local.engine.remote.options import SPEC_PREFIX, RemoteOptions

    if model.startswith(SPEC_PREFIX) or _served(ref):
        served = RemoteOptions.from_spec(model).api_model if model.startswith(SPEC_PREFIX) else None
        if not (_served(ref) and served == ref.name):
            raise _other_model(ref, f"the server model {served}" if served else model, path)
        return
    if model.startswith(SCRIPTED):
        from agentworld_local.engine.scripted import ScriptedBackend

        check_backend(ref, ScriptedBackend.from_file(model[len(SCRIPTED):]).info, path)
        return
    from agentworld_local.models.gguf_file import file_identity
    from agentworld_local.models.resolve import resolve_model

    file = resolve_model(model).path
    size = file.stat().st_size
    if ref.file_size is not None and size != ref.file_size:
        raise _other_model(ref, f"{file} ({format_bytes(size)})", path, changed=str(file) == ref.path)
    if ref.sha256 and ref.sha256_scope != "none" and file_identity(file).sha256 != ref.sha256:
        raise _other_model(ref, f"{file} (same size, different content)", path, changed=str(file) == ref.path)


def same_model(ref: ModelRef | None, info: Any) -> bool:
    """Whether a loaded backend (its ModelInfo) is the model `ref` records, as far as both
    record it: the file size, then the hash over the same part of the file."""
    if ref is None:
        return True
    if _served(ref) or getattr(info, "endpoint", None):  # a model on a server: its name is all we know
        return _served(ref) and getattr(info, "endpoint", None) is not None and ref.name == info.name
    if ref.file_size is not None and info.file_size is not None and ref.file_size != info.file_size:
        return False
    if ref.sha256 and info.sha256:
        return ref.sha256_scope == info.sha256_scope and ref.sha256 == info.sha256
    return True


def check_backend(ref: ModelRef | None, info: Any, path: Path) -> None:
    """After a load: refuse a backend that is not the model the session was made with."""
    if not same_model(ref, info):
        raise _other_model(ref, f"{info.path or info.name}", path)


def model_ref(info: Any) -> ModelRef:
    """What a trajectory records about a loaded backend (its ModelInfo): which model, and for
    llama.cpp in this process how it ran (context, GPU layers, flash attention, KV type,
    experts kept in RAM)."""
    # A remote model: which kind of server and where (the key is never recorded).
    served = {"backend": info.backend, "endpoint": info.endpoint} if getattr(info, "endpoint", None) else {}
    local = getattr(info, "kv_type", None) is not None  # only a GGUF loaded here has a KV cache type
    ran = {key: getattr(info, key, None) for key in ("n_ctx", "gpu_layers", "flash_attention", "kv_type", "cpu_moe")}
    return ModelRef(name=info.name, path=info.path, file_size=info.file_size, sha256=info.sha256,
                    sha256_scope=info.sha256_scope, architecture=info.architecture, extra=served,
                    **(ran if local else {}))


def _served(ref: ModelRef | None) -> bool:
    """Whether `ref` is a model on a server (the header names its endpoint)."""
    return ref is not None and bool(ref.extra.get("endpoint"))


def _other_model(ref: ModelRef | None, given: str, path: Path, *, changed: bool = False) -> InputError:
    """`changed`: the file is where the session's model was, but it is another one now."""
    if ref is None:
        return InputError(f"{path} does not say which model made it.", "Give the model with `--model`.")
    if _served(ref):
        made = f"the server model {ref.name} at {ref.extra['endpoint']}"
        same = f"`--backend {ref.extra.get('backend')} --base-url {ref.extra['endpoint']} --api-model {ref.name}`"
    else:
        made = ref.path or ref.name
        made += f", {format_bytes(ref.file_size)}" if ref.file_size else ""
        same = f"`--model {ref.path or ref.name}`"
    back = "Put the session's model back at that path" if changed else f"Resume with {same}"
    return InputError(
        f"{path} was made with {made}; {given} is another model.",
        f"{back}, or add `{ALLOW_OTHER_MODEL}` to go on with this one on purpose (each new turn then records its model).",
    )


# -- settings ---------------------------------------------------------------------------

def settings_from_header(header: Header) -> SessionSettings:
    """The settings a saved session was made with, as its header states them."""
    sampling, think = saved_settings(header.sampling, header.think)  # the options' rules
    return SessionSettings(
        sampling=sampling,
        think=think,
        seed=header.seed,
        task=header.task,
        initial_state=header.initial_state,
        controls=list(header.controls),
        world_description=header.world,
        tools=header.tools,
        system_prompt=header.system_prompt,
        prompt_pack=header.prompt_pack,
        # A name the file may hold anything under: the world checks it when the session opens.
        shared_world=header.extra.get("shared_world") or None,
    )


def resumed_settings(traj: Trajectory, options: ResumeOptions | None = None) -> tuple[SessionSettings, dict[str, Any]]:
    """The settings new turns run with: the header's, then what the last turn on the branch
    recorded, then `options`; and what each new turn records (where they differ from the header)."""
    options = options or ResumeOptions()
    base = settings_from_header(traj.header)
    last = next((record.settings for record in reversed(traj.current_branch()) if record.settings), None) or {}
    changes: dict[str, Any] = {**last}
    for key, value in (("temperature", options.temperature), ("max_tokens", options.max_tokens),
                       ("think", options.think), ("seed", options.seed)):
        if value is not None:
            changes[key] = value
    known = set(SamplingConfig.__dataclass_fields__)
    try:  # what a turn recorded is a file someone may have edited: the options' rules
        check_sampling(name=lambda key: f"`settings.{key}` of the last turn",
                       **{key: value for key, value in changes.items() if key in known})
        think = ThinkBudget.parse(changes["think"]) if "think" in changes else base.think
        seed = changes.get("seed", base.seed)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputError(f"`settings.seed` of the last turn is {seed!r}, not a whole number.", "")
    except InputError as problem:
        raise TrajectoryError(f"the settings recorded on the last turn cannot be used: {problem.message}",
                              "Give the settings again (e.g. `--max-tokens N`), or fork the session.") from None
    sampling = replace(base.sampling, **{key: value for key, value in changes.items() if key in known})
    settings = replace(base, sampling=sampling, think=think, seed=seed)
    record = {key: value for key, value in sampling.to_dict().items() if base.sampling.to_dict().get(key) != value}
    if think != base.think:
        record["think"] = think.label()
    if seed != base.seed:
        record["seed"] = seed
    return settings, record
