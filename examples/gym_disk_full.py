"""A scripted agent walks the `disk-full-server` world through Gymnasium.

    pip install 'agentworld-local[gym]'
    python examples/gym_disk_full.py                         # offline: answers written in advance
    python examples/gym_disk_full.py --model PATH/TO/model.gguf   # the world model predicts them

The agent here is a fixed list of commands (a real agent would choose each from the
observation). Nothing runs on this machine: every screen is predicted, and the episode is
saved as an ordinary session file (`awl replay FILE` shows it again).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium

import agentworld_local.env.gym  # noqa: F401  (registers agentworld/... with Gymnasium)

HERE = Path(__file__).resolve().parent
ACTIONS = ["df -h /", "du -sh /var/log/* | sort -h | tail -3", "sudo truncate -s 0 /var/log/nginx/access.log && df -h /", "[]"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=f"scripted:{HERE / 'disk_full_answers.json'}")
    parser.add_argument("--out-dir", default=None, help="Where the session file goes (default: awl's sessions folder).")
    args = parser.parse_args()
    env = gymnasium.make("agentworld/DiskFullServer-v0", model=args.model, out_dir=args.out_dir, max_tokens=2048)
    try:
        observation, info = env.reset(seed=7)
        print(f"task: {info['task']}\n{observation}")
        for action in ACTIONS:
            observation, reward, terminated, truncated, info = env.step(action)
            print(f"\n$ {action}\n{observation}")
            if terminated or truncated:
                break
        print(f"\nterminated={terminated} truncated={truncated}; the episode is in {env.unwrapped.world.trajectory}")
    finally:
        env.close()


if __name__ == "__main__":
    main()
