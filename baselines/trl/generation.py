"""Where the TRL adapter's episodes are sampled: the way ``GRPOTrainer`` samples its own completions.

- ``use_vllm=False``: the trainer's policy, entered through TRL's ``unwrap_model_for_generation`` (DeepSpeed
  ZeRO-3 parameters gathered, gradient checkpointing off for the duration) and, for FSDP v1, its
  ``summon_full_params`` on the root, exactly as ``GRPOTrainer._generate_single_turn`` enters them; then the shared
  seeded decoder with KV reuse samples every turn.
- ``use_vllm=True, vllm_mode="colocate"``: the ``vllm.LLM`` TRL built in this process
  (``trainer.vllm_generation.llm``), whose weights TRL has synced from the policy before it calls the rollout
  function. One request per episode turn, seeded per request.
- ``use_vllm=True, vllm_mode="server"``: the vLLM server TRL syncs (``trl vllm-serve`` or ``vllm serve``), through
  TRL's ``VLLMClient``: one request per episode turn, seeded per request, sent concurrently. Every process sends
  its own requests, so processes need not agree on how many turns their episodes last.

Turns end at ``</answer>`` (kept) or EOS in every backend; log-probs are of the distribution sampled from (TRL builds
its colocated engine with ``logprobs_mode="processed_logprobs"`` and asks a server to run so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import torch

from baselines.ppo.generation import STOP_TEXT
from harness.lm.generation import Decoded

SERVER_CONCURRENCY = 32
"""Requests one process keeps in flight to a vLLM server (the server batches them)."""


def check_generation(trainer) -> None:
    """Raise ``ValueError`` for a trainer set-up the adapter's sampling cannot follow, naming the fix."""
    dist, generation = trainer._dist, getattr(trainer, "vllm_generation", None)
    refusal = generation_refusal(
        use_vllm=trainer.use_vllm,
        vllm_mode=generation.mode if trainer.use_vllm else None,
        tensor_parallel=generation.tensor_parallel_size if trainer.use_vllm else 1,
        fsdp=dist.is_fsdp,
        zero3=dist.is_zero3,
        ds3_gather=trainer.args.ds3_gather_for_generation,
    )
    if refusal:
        raise ValueError(refusal)


def generation_refusal(
    *, use_vllm: bool, vllm_mode: str | None, tensor_parallel: int, fsdp: bool, zero3: bool, ds3_gather: bool
) -> str | None:
    """Why the adapter cannot sample episodes under this TRL set-up, with the fix; None when it can (the rule of
    :func:`check_generation`, on the settings it reads)."""
    if use_vllm:
        if vllm_mode == "colocate" and tensor_parallel > 1:
            return (
                f"vllm_tensor_parallel_size={tensor_parallel} in colocate mode is not supported by the ragen "
                "rollout_func (every rank of a tensor-parallel group would have to play the same turns in lockstep): "
                "serve the model with vllm_mode='server', or set vllm_tensor_parallel_size=1"
            )
        return None
    if fsdp:
        return (
            "FSDP with use_vllm=False is not supported by the ragen rollout_func: sharded forward passes need every "
            "process to run the same number of them, and episodes differ in length per process; set use_vllm=True "
            "(TRL gathers the full weights into vLLM), or use DeepSpeed ZeRO-3"
        )
    if zero3 and not ds3_gather:
        return (
            "ds3_gather_for_generation=False is not supported by the ragen rollout_func (partitioned forward passes "
            "need every process to run the same number of them): set ds3_gather_for_generation=True"
        )
    return None


@contextmanager
def policy_for_generation(trainer) -> Iterator:
    """The trainer's policy, ready to sample, in eval mode and without gradients, entered as TRL enters it for its
    own generation (see the module docstring); the training state is restored on exit."""
    from trl.models import unwrap_model_for_generation

    args = trainer.args
    with (
        unwrap_model_for_generation(
            trainer.model_wrapped,
            trainer.accelerator,
            gather_deepspeed3_params=args.ds3_gather_for_generation,
            gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs,
        ) as model,
        torch.no_grad(),
        trainer._dist.summon_full_params(trainer.model_wrapped, recurse=False),
    ):
        was_training = model.training
        model.eval()
        try:
            yield model
        finally:
            model.train(was_training)


@contextmanager
def vllm_awake(trainer) -> Iterator:
    """TRL's sleep-mode protocol around the episodes of one call (colocate with ``vllm_enable_sleep_mode``): weights
    re-pushed if they slept, the KV cache woken, and the engine put back to sleep afterwards, as
    ``VLLMGeneration.generate`` does around one batch."""
    generation = trainer.vllm_generation
    if generation.mode != "colocate" or not generation.enable_sleep_mode:
        yield
        return
    if generation._llm_weights_sleeping:
        generation.sync_weights()
    generation.llm.wake_up(tags=["kv_cache"])
    try:
        yield
    finally:
        generation.llm.sleep(level=2)
        generation._llm_weights_sleeping = True


def colocate_sampler(trainer, temperature: float, max_new_tokens: int) -> Callable[[list, list], list[Decoded]]:
    """``sampler(prompts, seeds)`` over TRL's colocated ``vllm.LLM``."""
    from baselines.ppo.vllm_engine import sample_with_llm
    from harness.agents.vllm_agent import import_vllm

    vllm, llm = import_vllm(), trainer.vllm_generation.llm

    def sample(prompts: list[list[int]], seeds: list[int]) -> list[Decoded]:
        return sample_with_llm(vllm, llm, prompts, seeds, temperature=temperature, max_new_tokens=max_new_tokens)

    return sample


def server_client(trainer):
    """TRL's client of the vLLM server: the trainer's own on the main process (the one that syncs the weights),
    a second client of the same server on the others (TRL makes one on the main process only)."""
    generation = trainer.vllm_generation
    if trainer.accelerator.is_main_process:
        return generation.vllm_client
    client = getattr(generation, "_ragen_client", None)
    if client is None:  # made once per process: the client checks the server's health when built
        from trl.generation.vllm_client import VLLMClient

        base_url = generation.server_base_url or f"http://{generation.server_host}:{generation.server_port}"
        client = VLLMClient(base_url=base_url, connection_timeout=generation.server_timeout)
        generation._ragen_client = client
    return client


def decoded_from_server(output: dict, tokenizer) -> Decoded:
    """One completion of ``VLLMClient.generate`` (one prompt, ``logprobs=0``) as a :class:`Decoded` row: the sampled
    token's log-prob at each position (the client sorts the returned candidates by probability)."""
    ids = tuple(int(t) for t in output["completion_ids"][0])
    candidates, candidate_ids = output["logprobs"][0], output["logprob_token_ids"][0]
    logprobs = tuple(
        float(values[ranked.index(token)]) for token, values, ranked in zip(ids, candidates, candidate_ids, strict=True)
    )
    stopped = bool(ids) and (ids[-1] == tokenizer.eos_token_id or tokenizer.decode(ids).endswith(STOP_TEXT))
    return Decoded(ids, logprobs, (), stopped)  # the server returns no full entropies


def client_sampler(client, tokenizer, temperature: float, max_new_tokens: int) -> Callable[[list, list], list[Decoded]]:
    """``sampler(prompts, seeds)`` over a TRL ``VLLMClient``: one seeded request per prompt, sent concurrently (a
    request carries one seed, so a group's identical first prompts still get distinct samples)."""
    from harness.agents.vllm_agent import SEED_MODULUS

    def one(prompt: list[int], seed: int) -> Decoded:
        output = client.generate(
            prompts=[list(prompt)], n=1, temperature=temperature, max_tokens=max_new_tokens, logprobs=0,
            generation_kwargs={"seed": seed % SEED_MODULUS, "stop": [STOP_TEXT], "include_stop_str_in_output": True},
        )  # fmt: skip
        return decoded_from_server(output, tokenizer)

    def sample(prompts: list[list[int]], seeds: list[int]) -> list[Decoded]:
        with ThreadPoolExecutor(max_workers=min(SERVER_CONCURRENCY, max(1, len(prompts)))) as pool:
            return list(pool.map(one, prompts, seeds))

    return sample


@contextmanager
def episode_sampling(trainer, temperature: float, max_new_tokens: int) -> Iterator[tuple]:
    """``(model, sampler)`` for :func:`baselines.ppo.rollout.collect_rollouts` over one call's episodes: the policy
    (sampler None) or, with ``use_vllm``, TRL's engine or server (model None); see the module docstring. The
    set-up is checked first (:func:`check_generation`)."""
    check_generation(trainer)
    if not trainer.use_vllm:
        with policy_for_generation(trainer) as model:
            yield model, None
        return
    if trainer.vllm_generation.mode == "colocate":
        sampler = colocate_sampler(trainer, temperature, max_new_tokens)
    else:
        sampler = client_sampler(server_client(trainer), trainer.processing_class, temperature, max_new_tokens)
    with vllm_awake(trainer):
        yield None, sampler
