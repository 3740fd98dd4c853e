"""The defaults every face shares, said once: context size, sampling, thinking, and the help
text that repeats them (`awl run`, `awl demo`, the TUI and the benchmark commands read them here).

Plain values only: this module imports nothing, so any layer may use it.
"""

from __future__ import annotations

#: Context size in tokens when nothing better is known (a scripted backend, a server that does
#: not say, a file that cannot be inspected); a GGUF loaded here gets what the machine holds.
DEFAULT_CTX = 16384
#: The most a GGUF gets without --ctx: llama.cpp reserves the whole KV cache at load and a
#: larger one can slow every batch (bench/context_cost.py measures it), so a context nobody
#: asked for should not cost every turn.
DEFAULT_CTX_CEILING = 32768
#: The longest system prompt, a starting state and one observation: below this nothing useful fits.
MIN_CTX = 2048

# The model card's recommended sampling.
DEFAULT_TEMPERATURE = 0.6
DEFAULT_TOP_P = 0.95
DEFAULT_TOP_K = 20
DEFAULT_MIN_P = 0.0
#: Most tokens for one observation, after thinking.
DEFAULT_MAX_TOKENS = 4096
DEFAULT_SEED = 0

#: Interactive thinking default: long enough for a useful plan, short enough to wait for. What
#: people running the model measured (docs: README, `--think`): the official evaluation allows
#: 32,768 new tokens; a median of 1,140 thinking tokens per step on Apple silicon, with runs past
#: 8,192 on `cd ; pwd`; 9-11k per step in a terminal study (a budget of 8,192 truncated 7
#: answers); thinking off about 25x fewer tokens and no loss on deterministic steps. A turn the
#: budget cuts says so (tokens.thinking_cut in its record, a line in `awl run`, the TUI's status).
DEFAULT_THINK_TOKENS = 1024
#: The largest budget `--think N` takes (more is `full`: no context holds it).
MAX_THINK_TOKENS = 999_999_999
#: `--think` left out means this budget, for every face (run, demo, TUI).
DEFAULT_THINK = str(DEFAULT_THINK_TOKENS)

# Help fragments that repeat the defaults (plain text: the faces add their own markup).
MODEL_HELP = (
    "A GGUF world model: a registry name from `awl models list` (e.g. qwen-agentworld-35b-a3b, or "
    "qwen-agentworld-35b-a3b:UD-Q2_K_XL for another quantization) or a file path (e.g. ~/models/world.gguf). "
    "To try awl without a model: `scripted:FILE`, raw answers written in advance (format: docs/scripted.md)."
)
THINK_HELP = (
    "Thinking budget: `off` (answer at once), a number of tokens (e.g. 512), or `full` (the model decides). "
    f"Default: {DEFAULT_THINK_TOKENS:,}, so a turn is one you can wait for: the official evaluation allows 32,768 "
    "new tokens, and people running the model measured a median of 1,140 thinking tokens per step on Apple silicon "
    "(runs past 8,192 on `cd ; pwd`) and 9-11k per step in a terminal study (a budget of 8,192 truncated 7 answers); "
    "thinking off used about 25x fewer tokens with no loss on deterministic steps. A turn the budget cuts says so; "
    "a scenario may set its own (`think`)."
)
CTX_HELP = (
    f"Context size in tokens (default: the largest this machine's memory holds for the model, up to what it was "
    f"trained for and {DEFAULT_CTX_CEILING:,}; the load says which and why; at least {MIN_CTX:,})."
)
TEMPERATURE_HELP = "Sampling temperature (0 = greedy)."
MAX_TOKENS_HELP = "Most tokens for one observation, after thinking."
SEED_HELP = "Sampling seed; the same seed replays the same session."
DOMAIN_HELP = "Which world to simulate (default: the scenario's, else terminal)."
SCENARIO_HELP = "A starting world: a name from `awl scenarios list`, or a .toml file."
TASK_HELP = "The agent's task, given to the world model as context; overrides the scenario's."
CONTROL_HELP = ("A control instruction (perturbation) from turn 1, e.g. \"the disk is full\". "
                "Repeatable; adds to the scenario's.")
PROMPTS_HELP = ("A prompt pack: a directory laid out like the official prompts/ (<domain>/system_prompt.txt), "
                "e.g. a checkout's prompts/ folder. See docs/domains.md.")
GPU_LAYERS_HELP = ("Layers to offload: auto (as many as fit on the GPU; 0 on a CPU-only build; "
                   "see `awl models info MODEL --plan`), all, or N.")
THREADS_HELP = "CPU threads (default: llama.cpp's choice; at most this machine's CPUs)."

#: An episode's most steps when nobody says (`awl run --agent`'s --agent-steps, the Gymnasium
#: ids' max_episode_steps): the domain's own ending usually comes sooner.
DEFAULT_EPISODE_STEPS = 10


#: How long a reward hook may take for one turn (`--reward-timeout`, `reward_timeout=`): it runs
#: after the turn is saved, off the model; one that does not answer in time fails the step (the
#: turn stays saved, without a reward). A judge model far away needs the time.
DEFAULT_REWARD_TIMEOUT_S = 120.0
REWARD_TIMEOUT_HELP = (f"Seconds a reward hook may take for one turn (default {DEFAULT_REWARD_TIMEOUT_S:g}); it runs "
                       "after the turn is saved, off the model, and one that takes longer fails that step (the turn "
                       "stays saved, without a reward).")

#: The agent's view (issue 41): every face an agent is trained through (OpenEnv observations and
#: state, REST step and stream answers, Gymnasium observations and `info`, MCP `act`/`reset`)
#: carries by default only what the environment itself would show. This one option, off by
#: default, also sends the simulator's side: `--reveal-simulator` on `awl serve` and `awl mcp`,
#: `reveal_simulator=True` in `make()`, `gymnasium.make()` and the vector env.
REVEAL_SIMULATOR_HELP = (
    "Also send clients the simulator's side of each turn: the world model's thinking and raw answer, token counts "
    "and timings, how the answer ended, how the reward was given, the session id and the trajectory file's path. "
    "Default: off, so an agent sees only what the environment would show (the observation, the turn, "
    "done/truncated, whether the answer was cut, the reward, why an action was invalid); the trajectory file "
    "always keeps everything.")
