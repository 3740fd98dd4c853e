"""Train a small policy with TRL's GRPO in the `disk-full-server` world, every screen predicted.

Needs what awl does not install, and a server running beside it:

    pip install trl datasets                     # TRL >= 1.0 (transformers >= 5.2), with PyTorch (CPU or GPU)
    awl serve --model PATH/TO/world-model.gguf --reward judge:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1
    python examples/trl_grpo.py --base-url http://127.0.0.1:8760

The device and precision come from the machine: a CUDA GPU trains in bf16 where it has bf16
(else fp32), Apple's GPU (mps) and the CPU in fp32. Without a CUDA GPU the default completion is
256 tokens instead of 2,048; a first try on a laptop can be as small as `--steps 2
--max-completion-length 64 --max-tool-calling-iterations 2`.

Each rollout is one session on the server (a file in its folder: `awl replay FILE` shows
it); the policy's tools are the terminal's actions, `run_shell_command(command)`,
`send_keystrokes(keystrokes, duration)` and `task_complete()`. The server's reward scores the
turns (the judge at the episode's end: when the policy calls `task_complete`), and
`episode_reward` hands each rollout's sum to GRPO (docs/trl.md). When the script ends, and
also when it fails or is interrupted, it closes every session it opened (each saved), so none
waits on the server for its `--idle` limit. The trained policy is saved in `--out`.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from agentworld_local.env.trl import close_environments, environment_factory, episode_reward
from agentworld_local.scenarios import load_scenario

WORLD = "disk-full-server"
GUIDE = "Use the terminal tools; call task_complete once the task is done."


def device_and_precision() -> tuple[str, str]:
    """("cuda" | "mps" | "cpu", "bf16" | "fp32"): what this machine trains on, and in what."""
    if torch.cuda.is_available():
        return "cuda", "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    if torch.backends.mps.is_available():
        return "mps", "fp32"
    return "cpu", "fp32"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8760", help="The running `awl serve`.")
    parser.add_argument("--policy", default="Qwen/Qwen3-0.6B",
                        help="The model to train, a Hub name or a folder (its chat template must take tools).")
    parser.add_argument("--steps", type=int, default=20, help="Training steps.")
    parser.add_argument("--num-generations", type=int, default=4, help="Rollouts per prompt (GRPO's group).")
    parser.add_argument("--max-completion-length", type=int, default=None,
                        help="The policy's tokens per rollout, tool results included (default: 2048 on a CUDA "
                             "GPU, 256 otherwise).")
    parser.add_argument("--max-tool-calling-iterations", type=int, default=8,
                        help="Tool calls per rollout at most: each is one world-model turn.")
    parser.add_argument("--out", default="trl-grpo-disk-full", help="Where the trained policy is saved.")
    args = parser.parse_args()

    device, precision = device_and_precision()
    length = args.max_completion_length or (2048 if device == "cuda" else 256)
    print(f"Training {args.policy} on {device} in {precision}, {length} completion tokens, "
          f"{args.max_tool_calling_iterations} tool calls per rollout at most.", flush=True)

    # One row per episode; the world's starting screen is appended to the prompt by reset().
    # The same seed for a group keeps its world the same: the rollouts differ by the policy only.
    task = load_scenario(WORLD).task
    rows = [{"prompt": [{"role": "user", "content": f"{task}\n{GUIDE}"}], "seed": index} for index in range(64)]
    Env = environment_factory(WORLD, base_url=args.base_url, token=os.environ.get("AWL_SERVE_TOKEN"),
                              think="off")  # cheaper turns
    config = GRPOConfig(
        output_dir=args.out, max_steps=args.steps, num_generations=args.num_generations,
        per_device_train_batch_size=args.num_generations, max_completion_length=length,
        max_tool_calling_iterations=args.max_tool_calling_iterations, logging_steps=1, report_to="none",
        use_cpu=device == "cpu", bf16=precision == "bf16", fp16=False,
        model_init_kwargs={"dtype": "bfloat16" if precision == "bf16" else "float32"})
    try:  # TRL closes no environment: whatever happens (Ctrl+C too), close the sessions, each saved
        trainer = GRPOTrainer(model=args.policy, reward_funcs=episode_reward, train_dataset=Dataset.from_list(rows),
                              environment_factory=Env, args=config)
        trainer.train()
        trainer.save_model(args.out)
        print(f"Trained {trainer.state.global_step} steps; the policy is in {args.out}.", flush=True)
    finally:
        left = close_environments(Env)
        print("Every session is closed, its file in the server's folder." if not left else
              f"The server did not close {len(left)} sessions ({', '.join(left)}): its --idle limit will "
              "(every turn is saved).", file=sys.stderr, flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
