"""SearchQA speed: world and index build time, search latency against a plain BM25, env steps per second.

Two ways to run it (neither is part of the test command):

    python -m pytest benchmarks/bench_searchqa.py --benchmark-only     # pytest-benchmark table (5k passages)
    python benchmarks/bench_searchqa.py [--sizes 5000,100000] [--plain-queries 200]   # the full report

Workloads, per knowledge-base size (passages = entities), in a fresh temporary index cache:
- build: generating the world, then tokenizing and indexing it with bm25s (first use; later uses load the cache).
- search: the queries of 300 episodes — the oracle's title searches and the whole question text (what an agent
  that has not read anything yet types) — each timed alone after a warm-up pass, top 5.
- plain: the same BM25 (Lucene idf, k1 1.5, b 0.75, the same tokens) computed the way ``rank_bm25`` does it — a
  term-frequency dict per passage, one Python pass over the passages per query term, numpy for the arithmetic, a
  full sort — on the first ``--plain-queries`` queries; the report gives ours / plain and how often both return
  the same top 5 (ties may order differently).
- steps: ``env.step`` through oracle episodes (search, then finish), resets excluded.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from collections import Counter

import numpy as np
import pytest
from bench_webshop import _pcts, time_searches

from ragen_envs.searchqa.env import SearchQAEnv
from ragen_envs.searchqa.kb import KBConfig, generate
from ragen_envs.searchqa.retrieval import TOP_K, BM25Retriever, passage_text, query_terms, tokenize


class PlainBM25:
    """BM25 as ``rank_bm25.BM25Okapi.get_scores`` computes it, with bm25s's Lucene idf so the rankings agree."""

    def __init__(self, corpus: list[list[str]], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.doc_freqs = [Counter(doc) for doc in corpus]
        self.doc_len = np.array([len(doc) for doc in corpus], dtype=np.float64)
        self.avgdl = self.doc_len.mean()
        df = Counter(term for doc in self.doc_freqs for term in doc)
        n = len(corpus)
        self.idf = {term: math.log(1 + (n - count + 0.5) / (count + 0.5)) for term, count in df.items()}

    def search(self, query: str, k: int = TOP_K) -> list[int]:
        scores = np.zeros(len(self.doc_freqs))
        norm = self.k1 * (1 - self.b + self.b * self.doc_len / self.avgdl)
        for term in query_terms(query):
            if term not in self.idf:
                continue
            freq = np.array([doc.get(term, 0) for doc in self.doc_freqs], dtype=np.float64)
            scores += self.idf[term] * freq * (self.k1 + 1) / (freq + norm)
        order = np.lexsort((np.arange(len(scores)), -scores))
        return [int(i) for i in order[:k] if scores[i] > 0]


def agent_queries(size: int, episodes: int = 300) -> list[str]:
    env = SearchQAEnv(kb_size=size)
    queries = []
    for seed in range(episodes):
        env.reset(seed=seed)
        queries += [hop.query for hop in env.question.path] + [env.question.text]
    return queries


def oracle_steps(size: int, episodes: int = 200) -> tuple[float, float]:
    """(steps per wall second, per CPU second) of oracle episodes, resets excluded."""
    env = SearchQAEnv(kb_size=size, response_format="raw")
    wall = cpu = 0.0
    steps = 0
    for seed in range(episodes):
        env.reset(seed=seed)
        done = False
        while not done:
            response = env.oracle_response()
            t0, c0 = time.perf_counter(), time.process_time()
            _, _, terminated, truncated, _ = env.step(response)
            wall, cpu = wall + time.perf_counter() - t0, cpu + time.process_time() - c0
            steps, done = steps + 1, terminated or truncated
    return steps / wall, steps / cpu


@pytest.mark.parametrize("size", [5000])
def test_search(benchmark, size, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEN_ENVS_CACHE", str(tmp_path))
    retriever = BM25Retriever(generate(KBConfig(size=size)))
    queries = agent_queries(size, 50)
    benchmark(lambda: [retriever.search(q) for q in queries])


def report(size: int, plain_queries: int) -> None:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["RAGEN_ENVS_CACHE"] = cache
        t0 = time.perf_counter()
        kb = generate(KBConfig(size=size))
        t1 = time.perf_counter()
        ours = BM25Retriever(kb)
        t2 = time.perf_counter()
        ours = BM25Retriever(kb)
        t3 = time.perf_counter()
        print(
            f"\n== {size:,} passages: world {t1 - t0:.2f} s, index build {t2 - t1:.2f} s, cached load {t3 - t2:.2f} s"
        )
        queries = agent_queries(size)
        wall, cpu = time_searches(ours.search, queries)
        print(f"ours  ({len(queries)} queries): wall {_pcts(wall)}; CPU {_pcts(cpu)}")
        t4 = time.perf_counter()
        plain = PlainBM25([tokenize(passage_text(kb, i)) for i in range(len(kb))])
        print(f"plain index (Counter per passage) {time.perf_counter() - t4:.2f} s")
        subset = queries[:plain_queries]
        p_wall, p_cpu = time_searches(plain.search, subset)
        o_cpu = cpu[:plain_queries]
        print(f"plain ({len(subset)} queries): wall {_pcts(p_wall)}; CPU {_pcts(p_cpu)}")
        print(
            f"plain / ours, CPU: p50 {np.percentile(p_cpu, 50) / np.percentile(o_cpu, 50):.0f}x, "
            f"p99 {np.percentile(p_cpu, 99) / np.percentile(o_cpu, 99):.0f}x; mean {p_cpu.mean() / o_cpu.mean():.0f}x"
        )
        same = sum(set(plain.search(q)) == set(ours.search(q)) for q in subset)
        print(f"same top-{TOP_K} set: {same}/{len(subset)}")
        per_wall, per_cpu = oracle_steps(size)
        print(f"oracle env steps: {per_wall:,.0f}/s wall, {per_cpu:,.0f} per CPU-second")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="5000,100000")
    parser.add_argument("--plain-queries", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    for size in (int(s) for s in args.sizes.split(",")):
        report(size, args.plain_queries)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
