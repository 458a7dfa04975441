"""A typed OpenEnv client of the server (``EnvClient`` with ragen-envs' action, observation and state models): what
the generated OpenEnv packages (:mod:`ragen_envs.serve.manifest`) hand to OpenEnv's ``AutoEnv``.

    async with RagenEnvClient(base_url="http://127.0.0.1:8000") as env:
        result = await env.reset(seed=3)               # result.observation.text, .info["instructions"]
        result = await env.step(RagenAction(response=model_text))   # or env.step(model_text)

``headers={"Authorization": "Bearer <token>"}`` reaches a server started with a token. :class:`ragen_envs.serve.Client`
is the Gymnasium-shaped client (``reset`` and ``step`` return Gymnasium's tuples).
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from ragen_envs.serve.environment import RagenAction, RagenObservation, RagenState

__all__ = ["RagenAction", "RagenEnvClient", "RagenObservation", "RagenState"]


class RagenEnvClient(EnvClient[RagenAction, RagenObservation, RagenState]):
    """OpenEnv's ``EnvClient`` for any ``ragen/*`` env the server serves; a step takes a :class:`RagenAction` or the
    response text itself."""

    def _step_payload(self, action: RagenAction | str) -> dict[str, Any]:
        if isinstance(action, str):
            action = RagenAction(response=action)
        return {"response": action.response}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[RagenObservation]:
        fields = {k: v for k, v in payload.get("observation", {}).items() if k in RagenObservation.model_fields}
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        observation = RagenObservation(**{**fields, "reward": reward, "done": done})
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> RagenState:
        return RagenState(**payload)
