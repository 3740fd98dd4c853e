"""An agent in the loop: an agent model proposes each action, the world model answers.

- protocol.py: what an agent is (`propose(history) -> Proposal`), the history it reads, and
  what the trajectory records of the agent side of a turn;
- prompt.py: the messages that ask an agent model for the next action in the domain's raw form;
- model_agent.py: an agent over any loaded model (an OpenAI-compatible server, a second GGUF,
  a scripted model), each on a thread of its own that owns that model;
- episode.py: the episode loop (a step limit, the domain's own ending, a reviewer's say).

Nothing an agent proposes is executed: it is an action for the world model to answer.
"""

from agentworld_local.agent.episode import Decision, Episode, EpisodeEnd, run_episode
from agentworld_local.agent.protocol import Agent, AgentHistory, Proposal

__all__ = ["Agent", "AgentHistory", "Decision", "Episode", "EpisodeEnd", "Proposal", "run_episode"]
