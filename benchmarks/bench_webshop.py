"""WebShop speed: build time and memory per tier, search latency, env steps/s in-process and over HTTP, cold start.

Two ways to run it (neither is part of the test command):

    python -m pytest benchmarks/bench_webshop.py --benchmark-only   # pytest-benchmark tables (1k/10k)
    python benchmarks/bench_webshop.py [--tiers 1k,10k,100k] [--fts5]   # the full report, with targets

Targets: search p99 ≤ 5 ms at 100k products; in-process step ≥ 2,000/s at 10k; a cold start of the
10k tier (fresh interpreter → first observation, index already cached) ≤ 3 s.

The peer, princeton-nlp/WebShop, cannot run here: it needs a JDK for pyserini/Lucene and a Google-Drive
download of its product files, and neither is reachable from this machine. ``--fts5`` instead times SQLite
FTS5's ``bm25()`` (the stdlib alternative we rejected) on the same queries and reports ours / FTS5.

Workloads:
- build: catalogue generation + BM25 index build of a tier into an empty cache, in a fresh process
  (wall time and peak RSS), plus the index size on disk.
- search: the queries a shopper types for 500 tasks (type + attributes, type alone, a raw instruction),
  timed one by one after one warm-up pass.
- steps: ``env.step`` with the env's own random well-formed responses (``action_space.sample()`` on a
  seeded space; clicks, searches, purchases, resets excluded from the timing), and the oracle's episodes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import ragen_envs  # noqa: F401  (registers the ids)
from ragen_envs.webshop.catalogue import Catalogue
from ragen_envs.webshop.search import search_index
from ragen_envs.webshop.serve import ShopServer
from ragen_envs.webshop.tasks import make_task

TARGETS = {"search p99 ms @100k": 5.0, "in-process steps/s @10k": 2000.0, "cold start s @10k": 3.0}


def shopper_queries(tier: str, n_tasks: int = 500) -> list[str]:
    cat = Catalogue(tier)
    queries = []
    for task_id in range(n_tasks):
        task = make_task(cat, task_id)
        queries += [" ".join((task.query, *task.attributes)), task.query, task.instruction]
    return queries


def time_searches(search, queries: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(wall seconds, CPU seconds) of each query; on a shared box the wall tail is mostly preemption."""
    for q in queries:  # warm-up: page cache, lazy imports
        search(q)
    wall, cpu = np.empty(len(queries)), np.empty(len(queries))
    for i, q in enumerate(queries):
        t0, c0 = time.perf_counter(), time.process_time()
        search(q)
        cpu[i] = time.process_time() - c0
        wall[i] = time.perf_counter() - t0
    return wall, cpu


def _pcts(sample: np.ndarray) -> str:
    return f"p50 {np.percentile(sample, 50) * 1e3:.3f} ms, p99 {np.percentile(sample, 99) * 1e3:.3f} ms"


def env_steps(tier: str, transport: str = "inprocess", steps: int = 3000, server_url: str | None = None):
    """(per wall second, per CPU second) of ``env.step`` with sampled well-formed responses, resets excluded.

    The cores are shared, so the CPU-second rate (this process's CPU time, the HTTP server's thread
    included) is the steadier figure; the wall rate is what a user sees on a busy machine.
    """
    kwargs = {"tier": tier, "response_format": "raw", "transport": transport}
    if server_url:
        kwargs["server_url"] = server_url
    env = gym.make("ragen/WebShop-v0", **kwargs).unwrapped
    env.action_space.seed(0)
    env.reset(seed=0)
    responses_done, busy, cpu = 0, 0.0, 0.0
    while responses_done < steps:
        response = env.action_space.sample()
        t0, c0 = time.perf_counter(), time.process_time()
        _, _, terminated, truncated, _ = env.step(response)
        busy += time.perf_counter() - t0
        cpu += time.process_time() - c0
        responses_done += 1
        if terminated or truncated:
            env.reset()
    env.close()
    return steps / busy, steps / cpu


def oracle_steps(tier: str, episodes: int = 200) -> tuple[float, float]:
    """(steps/s including the oracle's own thinking and resets, mean reward)."""
    env = gym.make("ragen/WebShop-v0", tier=tier, response_format="raw").unwrapped
    n, rewards = 0, []
    t0 = time.perf_counter()
    for seed in range(episodes):
        env.reset(seed=seed)
        done, total = False, 0.0
        while not done:
            _, r, te, tr, _ = env.step(env.oracle_response())
            total, n, done = total + r, n + 1, te or tr
        rewards.append(total)
    return n / (time.perf_counter() - t0), float(np.mean(rewards))


def build_in_fresh_process(tier: str) -> dict:
    """Build a tier's index into an empty cache in a new interpreter: wall seconds, peak RSS MiB, disk MiB."""
    with tempfile.TemporaryDirectory() as cache:
        code = (
            "import resource, time; t = time.perf_counter()\n"
            f"from ragen_envs.webshop.search import SearchIndex; SearchIndex({tier!r})\n"
            "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
        )
        env = {**os.environ, "RAGEN_ENVS_CACHE": cache}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        seconds, rss = map(float, out.stdout.split())
        disk = sum(f.stat().st_size for f in Path(cache).rglob("*") if f.is_file()) / 2**20
    return {"build s": seconds, "peak RSS MiB": rss, "index MiB": disk}


def cold_start(tier: str, first_search: bool = False) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh interpreter → ``gym.make`` → first observation, index cached; median of 3.

    With ``first_search``, up to the first results page: the index is opened lazily, at the first search.
    """
    import resource

    search_index(tier)  # make sure the cache exists
    code = f"import gymnasium as gym, ragen_envs\nenv = gym.make('ragen/WebShop-v0', tier={tier!r}); env.reset(seed=0)"
    if first_search:
        code += "\nenv.step(env.unwrapped.oracle_response())"

    walls, cpus = [], []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def fts5_search(tier: str):
    """SQLite FTS5 over the same documents, ranked by ``bm25()``: the alternative we measured and rejected."""
    import sqlite3

    from ragen_envs.webshop.catalogue import make_product
    from ragen_envs.webshop.search import query_terms

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize = 'porter unicode61')")
    conn.executemany(
        "INSERT INTO docs (rowid, body) VALUES (?, ?)",
        ((i, make_product(i).search_text()) for i in range(len(Catalogue(tier)))),
    )
    conn.execute("INSERT INTO docs (docs) VALUES ('optimize')")

    def search(query: str):
        terms = query_terms(query)
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        sql = "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT 50"
        return conn.execute(sql, (match,)).fetchall()

    return search


# ---- pytest-benchmark ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tier", ["1k", "10k"])
def test_search(benchmark, tier):
    index = search_index(tier)
    queries = iter(shopper_queries(tier, 100) * 1000)
    benchmark(lambda: index.search(next(queries)))


def random_stepper(env):
    """A zero-argument step with a seeded random action, resetting when the episode ends (for ``benchmark``)."""
    env.action_space.seed(0)
    env.reset(seed=0)

    def step():
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()

    return step


@pytest.mark.parametrize("tier", ["1k", "10k"])
def test_step_in_process(benchmark, tier):
    env = gym.make("ragen/WebShop-v0", tier=tier, response_format="raw").unwrapped
    benchmark(random_stepper(env))


def test_step_over_http(benchmark):
    with ShopServer("1k") as server:
        env = gym.make("ragen/WebShop-v0", transport="http", server_url=server.url, response_format="raw").unwrapped
        benchmark(random_stepper(env))
        env.close()


# ---- report -------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", default="1k,10k,100k")
    parser.add_argument("--fts5", action="store_true", help="also time SQLite FTS5 bm25() on the same queries")
    args = parser.parse_args(argv)
    tiers = args.tiers.split(",")
    print(f"load average at start: {os.getloadavg()}")
    for tier in tiers:
        b = build_in_fresh_process(tier)
        print(f"[build {tier}] " + ", ".join(f"{k} {v:.2f}" for k, v in b.items()))
    for tier in tiers:
        index = search_index(tier)
        queries = shopper_queries(tier)
        wall, cpu = time_searches(index.search, queries)
        print(f"[search {tier}] {len(queries)} queries: wall {_pcts(wall)}; CPU {_pcts(cpu)}")
        if args.fts5:
            f_wall, f_cpu = time_searches(fts5_search(tier), queries)
            ratio = np.percentile(f_cpu, 50) / np.percentile(cpu, 50), np.percentile(f_cpu, 99) / np.percentile(cpu, 99)
            print(
                f"[search {tier}] FTS5 bm25() on the same queries: wall {_pcts(f_wall)}; CPU {_pcts(f_cpu)}; "
                f"FTS5/ours (CPU) p50 ×{ratio[0]:.1f}, p99 ×{ratio[1]:.1f}"
            )
    for tier in tiers:
        rate, mean_reward = oracle_steps(tier)
        wall, cpu = env_steps(tier)
        print(
            f"[steps {tier}] in-process sampled: {wall:,.0f}/wall-s, {cpu:,.0f}/cpu-s; "
            f"oracle episodes: {rate:,.0f}/wall-s (mean reward {mean_reward:.3f})"
        )
    with ShopServer(tiers[0]) as server:
        wall, cpu = env_steps(tiers[0], "http", 1500, server.url)
        print(
            f"[steps {tiers[0]}] over HTTP (loopback, keep-alive, server in-process): {wall:,.0f}/wall-s, {cpu:,.0f}/cpu-s"
        )
    if "10k" in tiers:
        wall, cpu = cold_start("10k")
        print(f"[cold start 10k] {wall:.2f} s wall, {cpu:.2f} s CPU (interpreter start → first observation)")
        wall, cpu = cold_start("10k", first_search=True)
        print(f"[cold start 10k] {wall:.2f} s wall, {cpu:.2f} s CPU (interpreter start → first search results)")
    print(f"targets: {TARGETS}; load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
