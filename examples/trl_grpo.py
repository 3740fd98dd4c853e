"""Train a small policy with TRL's GRPO in the `disk-full-server` world, every screen predicted.

Needs what awl does not install, and a server running beside it (not run by awl's tests):

    pip install trl datasets                     # TRL >= 1.0 (transformers >= 5.2)
    awl serve --model PATH/TO/world-model.gguf --reward judge:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1
    python examples/trl_grpo.py --base-url http://127.0.0.1:8760

Each rollout is one session on the server (a file in its folder: `awl replay FILE` shows
it); the policy's tools are the terminal's actions, `run_shell_command(command)`,
`send_keystrokes(keystrokes, duration)` and `task_complete()`. The server's reward scores the
turns (the judge at the episode's end: when the policy calls `task_complete`), and
`episode_reward` hands each rollout's sum to GRPO (docs/trl.md).
"""

from __future__ import annotations

import argparse

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from agentworld_local.env.trl import close_environments, environment_factory, episode_reward
from agentworld_local.scenarios import load_scenario

WORLD = "disk-full-server"
GUIDE = "Use the terminal tools; call task_complete once the task is done."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8760", help="The running `awl serve`.")
    parser.add_argument("--policy", default="Qwen/Qwen3-0.6B", help="The model to train (its chat template must take tools).")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", default="trl-grpo-disk-full")
    args = parser.parse_args()

    # One row per episode; the world's starting screen is appended to the prompt by reset().
    # The same seed for a group keeps its world the same: the rollouts differ by the policy only.
    task = load_scenario(WORLD).task
    rows = [{"prompt": [{"role": "user", "content": f"{task}\n{GUIDE}"}], "seed": index} for index in range(64)]
    Env = environment_factory(WORLD, base_url=args.base_url, think="off")  # cheaper turns
    trainer = GRPOTrainer(
        model=args.policy,
        reward_funcs=episode_reward,
        train_dataset=Dataset.from_list(rows),
        environment_factory=Env,
        args=GRPOConfig(output_dir=args.out, max_steps=args.steps, num_generations=4, per_device_train_batch_size=4,
                        max_completion_length=2048, max_tool_calling_iterations=8, logging_steps=1, report_to="none"),
    )
    try:
        trainer.train()
    finally:
        close_environments(Env)  # TRL closes no environment: the last sessions, each saved


if __name__ == "__main__":
    main()
