"""Where chunks run and the MI family is scored: in the parent (``workers=1``), in spawned local processes, or
as Ray tasks.

Every backend hands back episodes.jsonl lines through ``emit(agent_spec, lines)``; the parent is their only writer. Workers
build their agent and env pool once per process (Ray reuses worker processes too); a local pool's workers then score the
MI family of every (agent, env) batch with the agents they rolled out with (:func:`score_processes`), the same pure
:func:`score_batch` a Ray task runs, so the numbers are those the parent would compute.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

from harness.agents.base import Agent
from harness.agents.options import AgentOptions
from harness.agents.registry import make_agent, parse_spec
from harness.config import RunConfig
from harness.mi import collapse_for
from harness.records import dumps_line
from harness.rollout import EnvPool, Job, rollout_chunk

_WORKER: dict[str, Any] = {}


def _worker_state(config_json: str) -> tuple[RunConfig, dict[str, Agent], EnvPool]:
    """Per-process config, agents and env pool, built once per config (Ray reuses worker processes)."""
    if _WORKER.get("config_json") != config_json:
        for agent in _WORKER.get("agents", {}).values():
            agent.close()
        config = RunConfig.from_json(json.loads(config_json))
        _WORKER.update(config_json=config_json, config=config, agents={}, pool=EnvPool(config))
    return _WORKER["config"], _WORKER["agents"], _WORKER["pool"]


PARENT_POLL_S = 0.5
"""How often a worker checks that the harness process that started it is still alive."""


def _worker_init(parent: int) -> None:
    """A local worker: one intra-op thread (workers share the cores; read by torch/numpy BLAS at import), Ctrl-C
    left to the parent (which stops the pool), and exit as soon as the parent is gone: after a ``kill -9`` of the
    harness nothing else would stop a worker in the middle of a long chunk."""
    import threading

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked since the spawn (_quiet_pool_class)

    def watch() -> None:
        import time

        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def run_chunk_lines(config_json: str, jobs: list[tuple[str, str, int, int]]) -> list[bytes]:
    """Worker entry point: roll out a chunk and return its episodes.jsonl lines."""
    config, agents, pool = _worker_state(config_json)
    spec = jobs[0][0]
    if spec not in agents:
        agents[spec] = make_agent(spec, config.agent_options)
    return [dumps_line(r) for r in rollout_chunk(agents[spec], config, [Job(*j) for j in jobs], pool)]


def execute_serial(config: RunConfig, chunks: list[list[Job]], agents: dict[str, Agent], emit: Callable,
                   begin: Callable[[str], None] | None = None) -> None:  # fmt: skip
    """Roll the chunks out in this process, building each agent once; hands each episode's line to ``emit(agent_spec, lines)``
    and calls ``begin(agent_spec)`` before each chunk (its work starts: progress clocks start there)."""
    pool = EnvPool(config)
    for chunk in chunks:
        spec = chunk[0].agent
        if spec not in agents:
            agents[spec] = make_agent(spec, config.agent_options)
        agent = agents[spec]
        if begin is not None:
            begin(spec)
        for record in rollout_chunk(agent, config, chunk, pool):
            emit(spec, [dumps_line(record)])


@functools.cache
def _quiet_pool_class() -> type:
    """``ProcessPoolExecutor`` whose workers start with SIGINT blocked (a signal mask survives fork and exec).

    A terminal's Ctrl-C reaches the whole process group, and a worker still importing (before
    :func:`_worker_init` ignores SIGINT) would print a KeyboardInterrupt traceback under the parent's one-line
    message; blocked, the signal waits until the worker ignores it. The parent holds its own SIGINT only while it
    spawns and registers a worker (the pool's private ``_spawn_process``), so an interrupt that arrived meanwhile is
    raised once the worker is registered, where the pool's Ctrl-C handling kills it with the others."""
    from concurrent.futures import ProcessPoolExecutor

    class QuietPool(ProcessPoolExecutor):
        def _spawn_process(self) -> None:
            previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                super()._spawn_process()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    return QuietPool


@contextlib.contextmanager
def process_pool(workers: int) -> Iterator[Any]:
    """A pool of up to ``workers`` spawned local processes (:func:`_worker_init`) for the block, shared by the
    rollouts and the MI family so each worker builds its agents once; processes start as work arrives, so a
    run with fewer chunks than ``workers`` starts fewer. Ctrl-C or a failure kills the workers at once."""
    import multiprocessing

    # spawn, not fork: a forked torch (or a forked thread pool) can deadlock, and spawn is what Ray does too.
    context = multiprocessing.get_context("spawn")
    executor = _quiet_pool_class()(workers, mp_context=context, initializer=_worker_init, initargs=(os.getpid(),))
    try:
        yield executor
    except BaseException:  # Ctrl-C or a failed task: stop the workers now instead of waiting for their tasks
        processes = list((executor._processes or {}).values())  # no public API kills a pool's running workers
        results = executor._result_queue  # shutdown drops the executor's reference; its manager thread keeps one
        manager = executor._executor_manager_thread  # likewise
        executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.kill()
        for process in processes:
            process.join()
        # A worker killed while writing its result leaves half a message in the result pipe, and the pool's manager
        # thread (which interpreter exit joins) would wait for the rest forever. With every worker gone, the parent
        # holds the pipe's last write end: closing it turns that wait into end-of-file, a broken pool it handles.
        results._writer.close()
        # Let that thread finish closing the pool before the interpreter's exit hook wakes it: Python 3.11's exit hook
        # can write to the wake-up pipe while the thread is closing it (a traceback at exit, "Bad file descriptor").
        if manager is not None:
            manager.join(timeout=30)
        raise
    executor.shutdown()


def _as_completed(pool: Any, calls: list[tuple[Any, Callable, tuple]]) -> Iterator[tuple[Any, Any]]:
    """Submit ``(key, function, args)`` calls to ``pool`` in order; yield ``(key, result)`` as each finishes."""
    from concurrent.futures import FIRST_COMPLETED, wait

    key_of = {pool.submit(function, *args): key for key, function, args in calls}
    pending = set(key_of)
    while pending:
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            yield key_of[future], future.result()


def execute_processes(config: RunConfig, chunks: list[list[Job]], pool: Any, emit: Callable) -> None:
    """Roll the chunks out in a :func:`process_pool`; hands each chunk's lines to ``emit(agent_spec, lines)`` as it finishes."""
    config_json = json.dumps(config.to_json())
    calls = [(c[0].agent, run_chunk_lines, (config_json, [j.key for j in c])) for c in chunks]
    for spec, lines in _as_completed(pool, calls):
        emit(spec, lines)


def task_resources(spec: str, options: AgentOptions, cluster_gpus: float) -> dict[str, float]:
    """The Ray resources one task of agent ``spec`` asks for: one CPU, and the GPUs its model uses when it runs on
    GPUs (``device`` ``cuda``/``cuda:N``, or ``auto`` on a cluster with GPUs): one for ``hf:``, the tensor-parallel
    size for ``vllm:``. Ray then hands the task those GPUs (``CUDA_VISIBLE_DEVICES``), so ``cuda`` in the task is
    its own GPU. Agents without a model of their own (scripted, ``openai:``) and CPU devices ask for none."""
    entry, _ = parse_spec(spec)
    resources = {"num_cpus": 1, "num_gpus": 0}
    on_gpu = options.device.startswith("cuda") or (options.device == "auto" and cluster_gpus > 0)
    if entry.gpus is not None and on_gpu:
        resources["num_gpus"] = entry.gpus(entry.resolve_options(dict(options.extra)))
    return resources


@contextlib.contextmanager
def ray_session(address: str, workers: int):
    """Ray connected for the block: to the cluster at ``address``, or a local one (``"local"``, ``workers`` CPUs and
    the GPUs Ray finds); an already connected session is used as it is. Raises ``ImportError`` without Ray."""
    try:
        import ray
    except ImportError:
        raise ImportError("--ray needs Ray: pip install 'ragen-envs[ray]'") from None
    started = not ray.is_initialized()
    if started:
        quiet = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if address == "local":
            ray.init(num_cpus=workers, **quiet)
        else:
            ray.init(address=address, **quiet)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def execute_ray(config: RunConfig, chunks: list[list[Job]], address: str, workers: int, emit: Callable) -> None:
    """Roll the chunks out as Ray tasks (``address`` ``"local"`` starts a local cluster), each with its agent's
    :func:`task_resources`; raises ``ImportError`` without Ray."""
    with ray_session(address, workers) as ray:
        gpus = ray.cluster_resources().get("GPU", 0)
        remote = {spec: ray.remote(**task_resources(spec, config.agent_options, gpus))(run_chunk_lines)
                  for spec in config.agents}  # fmt: skip
        config_ref = ray.put(json.dumps(config.to_json()))
        agent_of = {remote[c[0].agent].remote(config_ref, [j.key for j in c]): c[0].agent for c in chunks}
        pending = list(agent_of)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                emit(agent_of[ref], ray.get(ref))


def score_batch(config_json: str, spec: str, episodes: list) -> dict:
    """Worker entry point: the MI family of one (agent, env) batch, scored by this worker's agent."""
    config, agents, _ = _worker_state(config_json)
    if spec not in agents:
        agents[spec] = make_agent(spec, config.agent_options)
    return collapse_for(agents[spec], episodes, config.seed, config.mi_samples, config.mi_columns)


def scoring_cost(episodes: list, mi_samples: int) -> float:
    """A rough size of one batch's MI scoring, to start the largest first: the distinct (context, reasoning)
    pairs of the trajectory scheme (at most ``mi_samples`` turns, each under every other) times a turn's mean
    characters (its new user message and its reasoning)."""
    turns = [turn for episode in episodes for turn in episode["turns"]]
    if not turns:
        return 0.0
    chars = sum(len(turn.get("user") or "") + len(turn.get("reasoning") or "") for turn in turns) / len(turns)
    return min(mi_samples, len(turns)) ** 2 * chars


def score_processes(config: RunConfig, batches: dict[tuple[str, str], list], pool: Any,
                    done: Callable[[tuple[str, str], dict], None] | None = None) -> dict:  # fmt: skip
    """The MI family of every batch, each scored by :func:`score_batch` in a :func:`process_pool`'s worker, keyed
    like ``batches``; ``done(key, family)`` as each finishes. The largest batches (:func:`scoring_cost`) start
    first, so the workers do not wait at the end on one that started last."""
    config_json = json.dumps(config.to_json())
    order = sorted(batches, key=lambda key: -scoring_cost(batches[key], config.mi_samples))
    scored = {}
    for key, family in _as_completed(pool, [(key, score_batch, (config_json, key[0], batches[key])) for key in order]):
        scored[key] = family
        if done is not None:
            done(key, family)
    return scored


def score_ray(config: RunConfig, batches: dict[tuple[str, str], list], address: str, workers: int) -> dict:
    """The MI family of the batches whose agent runs on GPUs, each scored in a Ray task holding that agent's
    GPUs (where its model lives, as for the rollouts), keyed like ``batches``; the other agents' batches are left
    to the caller (scored where it runs)."""
    with ray_session(address, workers) as ray:
        gpus = ray.cluster_resources().get("GPU", 0)
        plans = {spec: task_resources(spec, config.agent_options, gpus) for spec in config.agents}
        config_ref = ray.put(json.dumps(config.to_json()))
        refs = {key: ray.remote(**plans[key[0]])(score_batch).remote(config_ref, key[0], episodes)
                for key, episodes in batches.items() if plans[key[0]]["num_gpus"]}  # fmt: skip
        return {key: ray.get(ref) for key, ref in refs.items()}
