"""Where chunks run: in the parent (``workers=1``), in spawned local processes, or as Ray tasks.

Every backend hands back episodes.jsonl lines through ``emit(agent_spec, lines)``; the parent is their only writer. Workers
build their agent and env pool once per process (Ray reuses worker processes too).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from harness.agents.base import Agent
from harness.agents.registry import make_agent
from harness.config import RunConfig
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
    import signal
    import threading

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)

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


def execute_processes(config: RunConfig, chunks: list[list[Job]], workers: int, emit: Callable) -> None:
    """Roll the chunks out in ``workers`` spawned processes; hands each chunk's lines to ``emit(agent_spec, lines)`` as it finishes."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    config_json = json.dumps(config.to_json())
    # spawn, not fork: a forked torch (or a forked thread pool) can deadlock, and spawn is what Ray does too.
    context = multiprocessing.get_context("spawn")
    executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init, initargs=(os.getpid(),))
    try:
        agent_of = {executor.submit(run_chunk_lines, config_json, [j.key for j in c]): c[0].agent for c in chunks}
        pending = set(agent_of)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                emit(agent_of[future], future.result())
    except BaseException:  # Ctrl-C or a failed chunk: stop the workers now instead of waiting for their chunks
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


def execute_ray(config: RunConfig, chunks: list[list[Job]], address: str, workers: int, emit: Callable) -> None:
    """Roll the chunks out as Ray tasks (``address`` ``"local"`` starts a local cluster); raises ``ImportError`` without Ray."""
    try:
        import ray
    except ImportError:
        raise ImportError("--ray needs Ray: pip install 'ragen-envs[ray]'") from None
    started = not ray.is_initialized()
    if started:
        if address == "local":
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1)(run_chunk_lines)
        config_ref = ray.put(json.dumps(config.to_json()))
        agent_of = {remote.remote(config_ref, [j.key for j in c]): c[0].agent for c in chunks}
        pending = list(agent_of)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                emit(agent_of[ref], ray.get(ref))
    finally:
        if started:
            ray.shutdown()
