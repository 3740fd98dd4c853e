"""`awl doctor`: what this machine and this llama.cpp build can do, how to fix a CPU-only build, and
a build that cannot load here (one line: engine/llama/library.py);
given a server (`--backend openai --base-url URL --api-model NAME`), what awl makes of it: its kind,
context and the turns awl sends it at once, and the notices a connect prints (a hybrid model on an
engine whose prefix cache cannot reuse it)."""

from __future__ import annotations

import json
import platform
import sys
from typing import TYPE_CHECKING, Any

import typer

from agentworld_local import __version__
from agentworld_local.cli.consoles import facts_console
from agentworld_local.cli.main import app
from agentworld_local.cli.model_options import remote_model_options
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.models.units import format_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from agentworld_local.models.hardware import GpuInfo

SCHEMA = "agentworld-local/doctor"
VERSION = 1


def collect(remote: RemoteOptions | None = None) -> dict[str, Any]:
    """Every fact `awl doctor` reports, as plain data (the `--json` output); `server` only when
    a server is given (`remote`)."""
    from agentworld_local.errors import AwlError
    from agentworld_local.models.hardware import detect_hardware, rebuild_advice, system_gpus  # psutil, when doctor runs

    try:
        from agentworld_local.engine import llama  # llama_cpp loads only for commands that need it
    except AwlError as unavailable:  # engine/llama/library.py: it does not load here (a CUDA build, no driver)
        llama, problem = None, unavailable
    visible = system_gpus()
    if llama is not None:
        devices = llama.build_devices()
        hardware = llama.machine_hardware()
        backend = llama.gpu_backend()
        advice = rebuild_advice(backend, visible, version=llama.llama_cpp_version())
        version = llama.llama_cpp_version()
        build: dict[str, Any] = {"backends": llama.build_backends(), "gpu_offload": llama.supports_gpu_offload(),
                                 "gpu_backend": backend, "devices": [_gpu(gpu) for gpu in devices]}
    else:  # the facts that need no llama.cpp, and the one line that says what is wrong and how to fix it
        hardware = detect_hardware()
        advice = (problem.one_line(), getattr(problem, "command", ""))
        version = getattr(problem, "version", None) or "unknown"
        build = {"backends": getattr(problem, "backends", []), "gpu_offload": False, "gpu_backend": None,
                 "devices": [], "error": problem.one_line()}
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "awl_version": __version__,
        "llama_cpp_python": version,
        "build": build,
        "system_gpus": [_gpu(gpu) for gpu in visible],
        "ram": {"total_bytes": hardware.ram_total, "available_bytes": hardware.ram_available},
        "cpu": {"threads": hardware.cpu_threads, "cores": hardware.cpu_cores, "machine": hardware.machine,
                "system": hardware.system},
        "advice": {"why": advice[0], "command": advice[1]} if advice else None,
        "files": _files(),
        **({"server": _server(remote)} if remote is not None else {}),
    }


def _server(remote: RemoteOptions) -> dict[str, Any]:
    from agentworld_local.engine.remote.server_kinds import server_report  # openai loads only when asked

    return server_report(remote)


def _render_server(server: dict[str, Any], console: Console) -> None:
    from rich.table import Table

    console.print()
    if "error" in server:
        console.print(f"[yellow]Server {server['endpoint']}: {server['error']}[/yellow]", highlight=False)
        return
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("server", f"{server['endpoint']} ({server['kind_label']}), model {server['model']}")
    table.add_row("context", f"{server['context']:,} tokens" if server["context"] else "not said (give it with --ctx)")
    said = "as the server says" if server["parallel_reported"] else "awl's default for this server"
    table.add_row("turns at once", f"{server['parallel']} ({said}; --parallel N to change)")
    table.add_row("hybrid model", "yes" if server["hybrid"] else "no (or not said)")
    console.print(table, markup=False)
    for notice in server["notices"]:
        console.print(notice, style="yellow", markup=False, highlight=False)


def _files() -> dict[str, Any]:
    """Where awl keeps the user's files (AWL_HOME moves them all)."""
    from agentworld_local import paths
    from agentworld_local.config import config_path
    from agentworld_local.models.registry import user_registry_file

    from agentworld_local.errors import AwlError

    config = config_path()
    files: dict[str, Any] = {"config": str(config), "config_exists": config.exists(), "registry": str(user_registry_file()),
                             "sessions": str(paths.sessions_dir()), "state_cache": None}
    try:
        from agentworld_local.engine.llama.state_cache import StateCache
    except AwlError:  # llama_cpp does not load here: said once, in the build's facts
        return files
    states = StateCache(paths.state_cache_dir()).info()
    files["state_cache"] = {"directory": str(states.directory), "entries": states.entries, "files": states.files,
                            "bytes": states.bytes}
    return files


def _gpu(gpu: GpuInfo) -> dict[str, Any]:
    return {"name": gpu.name, "total_bytes": gpu.total_bytes, "free_bytes": gpu.free_bytes, "source": gpu.source,
            "backend": gpu.backend, "unified": gpu.unified, "driver": gpu.driver}


def _gpu_line(gpu: dict[str, Any]) -> str:
    memory = (f"{format_bytes(gpu['free_bytes'])} free of {format_bytes(gpu['total_bytes'])}"
              if gpu["total_bytes"] else "memory unknown")
    shared = ", shared with the system RAM" if gpu["unified"] else ""
    driver = f", driver {gpu['driver']}" if gpu["driver"] else ""
    return f"{gpu['name']}: {memory}{shared}{driver}"


def render(facts: dict[str, Any], console: Console) -> None:
    from rich.table import Table

    build = facts["build"]
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Python", f"{facts['python']['version']} ({facts['python']['executable']})")
    table.add_row("awl", facts["awl_version"])
    table.add_row("llama-cpp-python", facts["llama_cpp_python"])
    offload = f"yes, {build['gpu_backend']}" if build["gpu_offload"] else "no (CPU-only build)"
    table.add_row("GPU offload", "unknown: llama-cpp-python does not load here (below)" if "error" in build else offload)
    table.add_row("build backends", (", ".join(build["backends"]) or "unknown")
                  + (" (from its library files)" if "error" in build and build["backends"] else ""))
    table.add_row("GPUs (llama.cpp)", "\n".join(_gpu_line(g) for g in build["devices"]) or "none")
    table.add_row("GPUs (system)", "\n".join(_gpu_line(g) for g in facts["system_gpus"])
                  or "none found (no nvidia-smi, not Apple Silicon)")
    ram = facts["ram"]
    table.add_row("RAM", f"{format_bytes(ram['available_bytes'])} available of {format_bytes(ram['total_bytes'])}")
    cpu = facts["cpu"]
    cores = f", {cpu['cores']} cores" if cpu["cores"] else ""
    table.add_row("CPU", f"{cpu['threads']} threads{cores} ({cpu['system']} {cpu['machine']})")
    files = facts["files"]
    table.add_row("config file", files["config"] + ("" if files["config_exists"] else " (none yet)"))
    table.add_row("sessions", files["sessions"])
    states = files["state_cache"]
    if states is not None:
        table.add_row("prompt states", f"{states['directory']}: {states['files']} files, "
                      f"{format_bytes(states['bytes'])} (`awl cache clear` empties it)")
    console.print(table)
    console.print()
    advice = facts["advice"]
    if "error" in build:  # one line, never wrapped: what is wrong and the command that fixes it
        console.print(build["error"], style="yellow", markup=False, highlight=False, soft_wrap=True)
    elif advice:
        console.print(f"[yellow]{advice['why']}[/yellow]")
        console.print(advice["command"], markup=False)
    elif build["gpu_offload"]:
        console.print(f"Ready for GPU offload ({build['gpu_backend']}): `--gpu-layers auto` plans layers and "
                      "context from free memory; `awl models info MODEL --plan` shows the plan.", markup=False)
    else:
        console.print("No GPU found: models run on the CPU. `awl models info MODEL --plan` shows what fits in RAM.",
                      markup=False)
    if "server" in facts:
        _render_server(facts["server"], console)


DOCTOR_HELP = (
    "Check this machine for running world models: Python, llama-cpp-python and its GPU backend "
    "(CUDA, Metal, Vulkan or CPU only), GPUs and their free memory, RAM, CPU threads.\n\n"
    "When llama-cpp-python was built for the CPU only on a machine with an NVIDIA GPU (or Apple Silicon), "
    "it prints the exact command that rebuilds it with CUDA (or Metal). When llama-cpp-python cannot load "
    "here at all (a CUDA build on a machine without the NVIDIA driver), it says so in one line with the fix, "
    "and exits 1.\n\n"
    "Given a server, it also says what awl makes of it: its kind, its context, the turns awl sends it "
    "at once, and whether its model is hybrid on an engine whose prefix cache cannot reuse it "
    "(each turn then costs the whole conversation).\n\n"
    "Example: `awl doctor`, `awl doctor --json`, or "
    "`awl doctor --backend openai --base-url http://127.0.0.1:8000/v1 --api-model Qwen/Qwen-AgentWorld-35B-A3B`."
)


@app.command(help=DOCTOR_HELP)
@remote_model_options
def doctor(
    as_json: bool = typer.Option(False, "--json", help="Print the facts as one JSON object."),
    remote: RemoteOptions | None = None,
) -> None:
    facts = collect(remote)
    if as_json:
        typer.echo(json.dumps(facts, indent=2))
    else:
        render(facts, facts_console())
    if "error" in facts["build"]:  # llama-cpp-python does not load here: a check that fails
        raise typer.Exit(1)

