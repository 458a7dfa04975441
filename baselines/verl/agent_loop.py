"""``RagenAgentLoop``: a verl agent loop (``agent_name: ragen_agent``) that plays one episode of any ragen env.

Per turn: the chat so far (the harness's RAGEN prompts: system = the env's instructions, a user message per
state with the last reward) is tokenised by verl's Continuous Token builder, the env's assistant prefill
(``<think>`` for think-format envs) is appended as tokens, the rollout server samples the response, the env
steps on prefill + response. Turn 1's prefill closes the prompt; every later turn's user message and prefill
are response tokens with ``response_mask`` 0 (not trained on), the sampled tokens have mask 1 and their
log-probs. The episode's return (format penalties included) is ``reward_score``, which verl puts on the last
response token (``rm_scores``), so no reward function is needed.

Per-episode facts travel in ``extra_fields``: ``reward_extra_info`` (``episode_return``, ``success``,
``turns``: usable as verl's ``algorithm.filter_groups.metric``), ``ragen_turns`` (each model turn's
response-token span, ``start``/``end``, beside its harness turn record: :func:`harness.episode.turn_record`, the
one every loop writes) and ``ragen_episode`` (env id, kwargs, seed, instructions): together an episode record of the harness, which the MI diagnostics in
:mod:`baselines.verl.trainer` read.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import uuid4

import gymnasium as gym

import ragen_envs  # noqa: F401  (registers the ids)
from baselines.verl.compat import require_verl
from harness.episode import turn_record
from harness.transcript import Transcript
from ragen_envs.plugins import ensure_registered

require_verl()
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register  # noqa: E402

from baselines.verl.dataset import AGENT_NAME  # noqa: E402

GENERATE_TIMEOUT_S = 600.0
"""Bound on one generation request (override per row with ``extra_info.generate_timeout_s``): a dead rollout
server fails the episode with a message instead of hanging the step."""


def _episode_spec(extra_info: Any) -> tuple[str, dict[str, Any], int, int, float]:
    if not isinstance(extra_info, dict) or "env_id" not in extra_info or "seed" not in extra_info:
        raise ValueError(
            "a ragen_agent row needs extra_info with env_id and seed: build the dataset with "
            "baselines.verl.write_dataset(path, env_id, seeds)"
        )
    kwargs = extra_info.get("env_kwargs") or {}
    if isinstance(kwargs, str):
        kwargs = json.loads(kwargs)
    return (
        str(extra_info["env_id"]), dict(kwargs), int(extra_info["seed"]),
        int(extra_info.get("max_new_tokens") or 400), float(extra_info.get("generate_timeout_s") or GENERATE_TIMEOUT_S),
    )  # fmt: skip


@register(AGENT_NAME)
class RagenAgentLoop(AgentLoopBase):
    """One ragen episode per call of :meth:`run`; see the module docstring."""

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        """Play the row's episode with the rollout server; returns its tokens, response mask, log-probs and return."""
        env_id, env_kwargs, seed, max_new_tokens, timeout_s = _episode_spec(kwargs.get("extra_info"))
        response_budget = int(self.rollout_config.response_length)
        ensure_registered(env_id)  # a Ray worker registers an installed package's envs before making one
        env = gym.make(env_id, **env_kwargs)
        try:
            observation, info = env.reset(seed=seed)
            transcript = Transcript(info["instructions"], observation, env.unwrapped.response_format)
            prefill = transcript.prefill
            prefill_ids = self.tokenizer.encode(prefill, add_special_tokens=False) if prefill else []
            messages = list(transcript.context().messages)
            prompt_ids = await self.ct_build_initial_tokens(messages) + prefill_ids
            ids, mask, logprobs = list(prompt_ids), [], None
            turns: list[dict[str, Any]] = []
            episode_return, success, truncated_by_budget = 0.0, False, False
            request_id = uuid4().hex  # one id per episode: the server manager keeps its turns on one server
            while True:
                remaining = response_budget - len(mask)
                if remaining <= 0:
                    truncated_by_budget = True
                    break
                params = {**sampling_params, "max_tokens": min(max_new_tokens, remaining)}
                try:
                    out = await asyncio.wait_for(
                        self.server_manager.generate(request_id=request_id, prompt_ids=ids, sampling_params=params),
                        timeout=timeout_s,
                    )
                except asyncio.TimeoutError as error:
                    raise TimeoutError(
                        f"the rollout server gave no response within {timeout_s:g} s ({env_id}, seed {seed}, turn "
                        f"{len(turns) + 1}); raise extra_info.generate_timeout_s if generations are that slow"
                    ) from error
                if logprobs is None and out.log_probs:
                    logprobs = [0.0] * len(mask)
                start = len(mask)
                merged, mask, logprobs = await self.ct_merge_assistant_token(
                    ids,
                    out.token_ids,
                    mask,
                    logprobs,
                    assistant_logprobs=out.log_probs if logprobs is not None else None,
                )
                ids = merged.token_ids
                response = prefill + self.tokenizer.decode(out.token_ids, skip_special_tokens=True)
                # envs are fast, but some run a sandboxed process per step: off the event loop
                step = await self.loop.run_in_executor(None, env.step, response)
                turn = {"start": start, "end": len(mask), **turn_record(transcript, response, step)}
                turns.append(turn)
                episode_return += turn["reward"]
                if turn["terminated"] or turn["truncated"]:
                    success = bool(turn["info"].get("success", False))
                    break
                previous = [*messages, {"role": "assistant", "content": response}]
                transcript.advance(response, turn["observation"], turn["reward"])
                messages = list(transcript.context().messages)
                merged, mask, logprobs = await self.ct_merge_context_msg(previous, messages, ids, mask, logprobs)
                ids = merged.token_ids + prefill_ids
                mask = mask + [0] * len(prefill_ids)
                if logprobs is not None:
                    logprobs = logprobs + [0.0] * len(prefill_ids)
        finally:
            env.close()
        response_ids = ids[len(prompt_ids) :]
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[:response_budget],
            response_mask=mask[:response_budget],
            response_logprobs=logprobs[:response_budget] if logprobs is not None else None,
            reward_score=episode_return,
            num_turns=2 * len(turns) + 1,  # system + user/assistant exchanges, as verl counts chat turns
            metrics={},
            extra_fields={
                "reward_extra_info": {
                    "episode_return": episode_return, "success": float(success), "turns": float(len(turns)),
                    "truncated_by_budget": float(truncated_by_budget),
                },
                "ragen_turns": turns,
                "ragen_episode": {"env_id": env_id, "env_kwargs": env_kwargs, "seed": seed,
                                  "instructions": transcript.system["content"]},  # fmt: skip
                "turn_scores": [],
                "tool_rewards": [],
            },
        )  # fmt: skip
