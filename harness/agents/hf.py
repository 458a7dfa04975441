"""``hf:<dir-or-name>``: a transformers causal LM on CPU or GPU (the ``llm`` extra); ``tiny`` is the shipped one.

Generation renders each context with the tokenizer's chat template (``add_generation_prompt``) followed by
the prefill, batches prompts of similar length (``batch_size`` per forward, left padding), decodes over the
KV cache and stops each row at ``</answer>`` (kept), at the model's end-of-sequence tokens (dropped), or at
the per-turn budget ``max_new_tokens``; see :mod:`harness.lm.generation`. Every request samples with its
own seeded generator, so a response depends on its context and seed only. Each generation carries its
tokens' log-probs and the entropies of the distributions they were drawn from (``temperature`` applied;
greedy when it is 0). Identical prompts in a batch (the samples of one env seed) share one prefill, and a
request naming its episode (``Request.episode``; the rollout does) starts from the keys/values that episode's
previous turn left (its prompt and response): a turn runs only its new tokens, so an episode's prefill grows
linearly with its turns instead of quadratically (``extra["prefix_cache"] = False`` turns this off; the
responses are the same either way, up to float rounding).

Scoring is teacher forcing under the same distribution; ``score_matrix`` (the MI family's every-text-
under-every-context) runs each context once and reuses its KV cache for all texts.

Device and dtype: ``device="auto"`` takes CUDA when available; ``dtype="auto"`` is bfloat16 on GPU and
float32 on CPU. On CPU the agent generates and scores with ``extra["threads"]`` torch threads (``harness run
--threads``; default :data:`harness.threads.DEFAULT_THREADS`, one, for the reason given in :mod:`harness.threads`;
this sets torch's process-wide count); ``extra["score_threads"]``, when given, overrides it for ``score_matrix``,
which restores the generation count after. A local directory loads offline (``local_files_only``); a hub name needs
network access.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

from harness.agents.base import Agent, Context, Generation, Request, Score
from harness.agents.options import AgentOptions
from harness.device import check_device
from harness.threads import resolve_threads, torch_threads
from harness.transcript import continuation_ids, render_prompt

STOP = "</answer>"


def _import_llm():
    try:
        import torch
        import transformers
    except ImportError as error:
        raise ImportError(
            "the hf: agent needs torch and transformers: pip install torch==2.13.0 && pip install -e '.[llm]'"
        ) from error
    return torch, transformers


def _check_model_location(name_or_dir: str, flag: str = "hf:") -> None:
    """A path that does not exist, or a directory without a saved model, is named here, before transformers
    answers with a hub-name error or a tokenizer-conversion riddle."""
    # a hub name is "name" or "org/name"; anything else with a slash (or ./, ~) is meant as a local path
    looks_like_path = name_or_dir.startswith(("/", ".", "~")) or name_or_dir.count("/") > 1
    if os.path.isdir(name_or_dir):
        if not os.path.isfile(os.path.join(name_or_dir, "config.json")):
            raise ValueError(
                f"{flag}{name_or_dir}: the directory holds no model (no config.json); point {flag.strip()} at a directory "
                f"written by save_pretrained (config.json, weights, tokenizer files), e.g. {flag}baselines/tiny/model"
            )
    elif looks_like_path and not os.path.exists(os.path.expanduser(name_or_dir)):
        raise ValueError(f"{flag}{name_or_dir}: no such directory (a model directory, or a hub name like org/model)")


def _not_cached(name: str, flag: str = "hf:") -> str:
    return f"{flag}{name}: not in the local cache: download it (hf download {name}), or pass {flag}/path/to/dir"


def _check_hub_cache(name: str, flag: str) -> None:
    """Offline, a hub name must be in the local cache: say so by name, before transformers is imported."""
    try:
        from huggingface_hub import constants, try_to_load_from_cache
    except ImportError:
        return  # the llm extra is missing: _import_llm says how to install it
    offline = getattr(constants, "is_offline_mode", lambda: constants.HF_HUB_OFFLINE)()
    if offline and not isinstance(try_to_load_from_cache(name, "config.json"), str):
        raise ValueError(f"{_not_cached(name, flag)}; HF_HUB_OFFLINE is set, so nothing is downloaded")


def check_model_source(name_or_dir: str, flag: str = "hf:") -> bool:
    """Whether ``name_or_dir`` is a local model directory (else a hub name); a missing path, a directory without a
    model or, offline, a hub name not in the cache raises ``ValueError`` naming it as ``flag`` + name (the way the
    user wrote it: ``hf:`` or ``--model ``), without importing torch."""
    _check_model_location(name_or_dir, flag)
    local = os.path.isdir(name_or_dir)
    if not local:
        _check_hub_cache(name_or_dir, flag)
    return local


class HFAgent(Agent):
    """A transformers causal LM; see the module docstring."""

    can_score = True

    def __init__(self, model, tokenizer, options: AgentOptions | None = None, name: str = "") -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.options = options or AgentOptions()
        self.name = name
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.pad_id = tokenizer.pad_token_id
        stop_piece = tokenizer.encode(STOP, add_special_tokens=False)
        eos = model.generation_config.eos_token_id if model.generation_config is not None else None
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        if tokenizer.eos_token_id is not None:
            eos.append(tokenizer.eos_token_id)
        # A checkpoint may list "</answer>" among its end-of-sequence ids (the tiny model does, for plain
        # ``generate``); here it is a stop id whose text is kept, not an end-of-sequence token to drop.
        self.eos_ids = sorted(set(eos) - set(stop_piece if len(stop_piece) == 1 else []))
        # A single-token "</answer>" is a stop id; otherwise the decoded tail is checked for the string.
        self.stop_ids = self.eos_ids + (stop_piece if len(stop_piece) == 1 else [])
        self._stop_is_token = len(stop_piece) == 1
        # per episode (Request.episode), the keys/values its last turn left: the next turn runs only its new
        # tokens. Holds the last generate() call's episodes only (lockstep rollouts ask every turn of an episode
        # in consecutive calls), minus those the rollout said ended (end_episodes), so memory stays one batch of
        # histories. extra["prefix_cache"] = False: off.
        self._prefixes: dict[Any, Any] = {}
        self._reuse_prefixes = bool(self.options.extra.get("prefix_cache", True))

    @classmethod
    def from_pretrained(cls, name_or_dir: str, options: AgentOptions | None = None) -> HFAgent:
        """Load a transformers causal LM and its tokenizer from a local folder or cached name; raises with the fix when the asked device is not available."""
        options = options or AgentOptions()
        device = options.device
        # what a stat or a metadata read can answer comes before importing torch and transformers (seconds)
        check_device(device)
        local = check_model_source(name_or_dir)
        torch, transformers = _import_llm()
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        elif device.startswith("cuda") and not torch.cuda.is_available():
            why = "this torch is built without CUDA" if torch.version.cuda is None else "no CUDA device is visible"
            raise ValueError(f"--device {device}: CUDA is not available ({why}); use --device cpu or --device auto")
        dtype = options.dtype
        if dtype == "auto":
            dtype = "bfloat16" if device.startswith("cuda") else "float32"
        if not hasattr(torch, dtype):
            raise ValueError(f"dtype must be one of auto, float32, bfloat16, float16; got {dtype!r}")
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(name_or_dir, local_files_only=local)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                name_or_dir, dtype=getattr(torch, dtype), local_files_only=local
            )
        except OSError as error:  # transformers' "couldn't connect / couldn't find them in the cached files"
            if local:
                raise
            raise ValueError(f"{_not_cached(name_or_dir)} ({str(error).splitlines()[0]})") from error
        model.to(device).eval()
        if device == "cpu":
            torch.set_num_threads(resolve_threads(options.extra.get("threads")))
        if tokenizer.chat_template is None:
            raise ValueError(f"{name_or_dir}: the tokenizer has no chat template; the hf: agent needs one")
        return cls(model, tokenizer, options, name=name_or_dir)

    # ---- text <-> ids --------------------------------------------------------------------------------------
    def render(self, context: Context) -> str:
        """The prompt text: chat template with the generation prompt, then the prefill."""
        return render_prompt(self.tokenizer, context)

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _split(self, context: Context, text: str) -> tuple[list[int], list[int]]:
        """Prompt ids and text ids; the text's ids are those of the joint encoding when the prompt is a prefix."""
        prompt = self.render(context)
        head = self._encode(prompt)
        return head, continuation_ids(self.tokenizer, prompt, head, text)

    # ---- the protocol --------------------------------------------------------------------------------------
    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """Agent protocol's generate: one :class:`Generation` per request, in order, sampled in length-sorted batches of ``options.batch_size`` with each request's own seed."""
        from harness.lm.generation import generate_ids

        prompts = [self._encode(self.render(r.context)) for r in requests]
        order = sorted(range(len(requests)), key=lambda i: (len(prompts[i]), i))
        results: list[Generation | None] = [None] * len(requests)
        step = self.options.batch_size
        asked = {r.episode for r in requests if r.episode is not None}
        # only this call's episodes can use what the last call left; the rest (ended, or another chunk's) goes
        previous = {e: p for e, p in self._prefixes.items() if e in asked}
        self._prefixes = {}
        for start in range(0, len(order), step):
            rows = order[start : start + step]
            episodes = [requests[i].episode if self._reuse_prefixes else None for i in rows]
            decoded = generate_ids(
                self.model,
                [prompts[i] for i in rows],
                [requests[i].seed for i in rows],
                temperature=self.options.temperature,
                max_new_tokens=self.options.max_new_tokens,
                stop_ids=self.stop_ids,
                pad_id=self.pad_id,
                stop_text=None if self._stop_is_token else (self.tokenizer, STOP),
                prefixes=[None if e is None else previous.pop(e, None) for e in episodes],  # freed once used
                keep_prefixes=any(e is not None for e in episodes),
            )
            for i, episode, out in zip(rows, episodes, decoded, strict=True):
                results[i] = self._to_generation(out)
                if episode is not None and out.prefix is not None:
                    self._prefixes[episode] = out.prefix
        return results  # type: ignore[return-value]

    def _to_generation(self, out) -> Generation:
        ids, logprobs, entropies = list(out.token_ids), list(out.logprobs), list(out.entropies)
        if ids and ids[-1] in self.eos_ids:
            ids, logprobs, entropies = ids[:-1], logprobs[:-1], entropies[:-1]
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        end = text.find(STOP)
        if end >= 0:
            text = text[: end + len(STOP)]
        return Generation(
            text=text, num_tokens=len(ids), token_logprobs=tuple(logprobs), token_entropies=tuple(entropies)
        )

    def score(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[Score]:
        """Agent protocol's score: teacher-forced log p(``texts[i]`` | ``contexts[i]``) as one :class:`Score` per pair."""
        from harness.lm.scoring import score_ids

        pairs = [self._split(c, t) for c, t in zip(contexts, texts, strict=True)]
        raw = score_ids(
            self.model,
            [p for p, _ in pairs],
            [t for _, t in pairs],
            temperature=self.options.temperature,
            pad_id=self.pad_id,
            batch_size=self.options.batch_size,
        )
        return [Score(logprob_sum=s, num_tokens=n) for s, n in raw]

    def token_entropy(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[tuple[float, int]]:
        """``(summed token entropy, token count)`` of ``texts[i]`` teacher-forced after ``contexts[i]``: the
        entropy of the policy's distribution at each of the text's tokens (what trainers log as entropy)."""
        from harness.lm.scoring import score_ids

        pairs = [self._split(c, t) for c, t in zip(contexts, texts, strict=True)]
        with self._scoring_threads():
            raw = score_ids(self.model, [p for p, _ in pairs], [t for _, t in pairs],
                            temperature=self.options.temperature, pad_id=self.pad_id,
                            batch_size=self.options.batch_size, entropy=True)  # fmt: skip
        return [(h, n) for _, n, h in raw]

    def score_matrix(self, contexts: Sequence[Context], texts: Sequence[str], wanted=None):
        """Agent protocol's score_matrix: ``(logprob_sum, num_tokens)`` arrays of shape ``(len(texts), len(contexts))``: every text under every context (``wanted`` optionally masks the entries to compute)."""
        from harness.lm.scoring import score_matrix_ids

        rendered = [self.render(c) for c in contexts]
        heads = [self._encode(r) for r in rendered]
        # Text ids from the first context's joint encoding (prompts end at the prefill or a special token,
        # so the split does not depend on which context precedes the text); the same split as _split.
        bodies = [continuation_ids(self.tokenizer, rendered[0], heads[0], t) if contexts else [] for t in texts]
        with self._scoring_threads():
            return score_matrix_ids(
                self.model,
                heads,
                bodies,
                temperature=self.options.temperature,
                pad_id=self.pad_id,
                batch_size=self.options.batch_size,
                wanted=wanted,
            )

    @contextlib.contextmanager
    def _scoring_threads(self):
        """On CPU, teacher forcing runs with ``extra["score_threads"]`` (default: ``extra["threads"]``) torch
        threads, then the generation count is restored."""
        if next(self.model.parameters()).device.type != "cpu":
            yield
            return
        extra = self.options.extra
        score_threads = extra.get("score_threads")  # None (the declared default): as for generation
        with torch_threads(resolve_threads(extra.get("threads") if score_threads is None else score_threads)):
            yield

    def describe(self) -> dict[str, Any]:
        """Agent protocol's describe: spec, model, sampling options, device and dtype, as config.json records them."""
        return {
            "spec": self.spec,
            "model": self.name,
            "temperature": self.options.temperature,
            "max_new_tokens": self.options.max_new_tokens,
            "device": str(next(self.model.parameters()).device),
            "dtype": str(next(self.model.parameters()).dtype).replace("torch.", ""),
        }

    def end_episodes(self, episodes: Sequence[Any]) -> None:
        """Agent protocol's end_episodes: drop the cached prompt keys/values of these episodes."""
        for episode in episodes:
            self._prefixes.pop(episode, None)

    def close(self) -> None:
        """Agent protocol's close: drop the model and the cached keys/values (idempotent)."""
        self.model = None
        self._prefixes = {}
