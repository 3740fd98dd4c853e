"""Run verifiers' own OpenEnv taskset engine (`OpenEnvEnv.run`) against a server by base_url,
with a scripted player in place of a policy model. Runs in a virtualenv of its own (verifiers
pins packages awl's cannot share: tests/serve/test_verifiers.py makes it); prints one JSON line:
what the player was shown, the rewards verifiers recorded, and why it stopped (None: `done`).

    python verifiers_driver.py URL '["ls", "[]"]' '{"seed": 3}'
"""
import asyncio, contextlib, json, sys
from types import SimpleNamespace

from verifiers.v1.tasksets.openenv.taskset import OpenEnvEnv

url, actions, reset = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
seen = {"payloads": [], "rewards": {}, "stopped": None}


class Trace:
    def stop(self, why):
        seen["stopped"] = why

    def record_reward(self, name, value):
        seen["rewards"][name] = value


class Interaction:
    def __init__(self):
        self.trace, self.replies = Trace(), list(actions)

    async def turn(self, payload):
        seen["payloads"].append(json.loads(payload))
        reply = self.replies.pop(0) if self.replies else ""
        return SimpleNamespace(terminated=False, last_reply=reply)


@contextlib.asynccontextmanager
async def interaction(task):
    yield Interaction()


task = SimpleNamespace(data=SimpleNamespace(base_url=url, env=None, use_docker=False, provider_kwargs={}, reset=reset))
agents = SimpleNamespace(player=SimpleNamespace(interaction=interaction))
asyncio.run(OpenEnvEnv.run(None, task, agents))
print(json.dumps(seen))
