"""Steps/s over the OpenEnv server's WebSocket vs in-process ``gym.make``, for a cheap and an expensive env.

    python benchmarks/bench_serve.py                      # both envs, 5 interleaved rounds
    python benchmarks/bench_serve.py --envs ragen/Sokoban-v0 --rounds 9 --sessions 8
    python benchmarks/bench_serve.py --baseline ../other-checkout   # that checkout's server too, same rounds

Each env's episodes are planned once in process (random well-formed actions with the oracle every third turn,
seeds 0..N-1), then replayed three ways, round by round on the same CPU: in process; through one
``ragen_envs.serve.Client`` session (each step a round trip); and through ``--sessions`` concurrent sessions
(threads, one Client each). A step is one ``step(text)``; resets are timed too but not counted. Rates are wall
clock (the server is another process), so the load on the machine is printed beside them; next to them, CPU
time per step (this process plus the server's, from /proc), which the load on a shared box disturbs far less.
With ``--baseline DIR`` the server of another checkout (e.g. a worktree of main) is replayed in the same rounds,
one row each, so a change to the server is measured side by side.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym

import ragen_envs  # noqa: F401  (registers the ids)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ENVS = {"ragen/Sokoban-v0": 200, "ragen/CodeExec-v0": 6}
"""env id -> episodes per round: Sokoban's step is tens of microseconds, CodeExec's runs tests in a sandbox."""


def plan(env_id: str, episodes: int) -> list[tuple[int, list[str]]]:
    """(seed, responses) per episode, played once in process so every replay takes the same path."""
    plans = []
    env = gym.make(env_id)
    for seed in range(episodes):
        env.reset(seed=seed)
        env.action_space.seed(seed)
        responses, done, turn = [], False, 0
        while not done:
            response = env.unwrapped.oracle_response() if turn % 3 == 2 else env.action_space.sample()
            _, _, terminated, truncated, _ = env.step(response)
            responses.append(response)
            done, turn = terminated or truncated, turn + 1
        plans.append((seed, responses))
    env.close()
    return plans


def replay(env, plans) -> int:
    steps = 0
    for seed, responses in plans:
        env.reset(seed=seed)
        for response in responses:
            env.step(response)
            steps += 1
    return steps


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_process(env_id: str, plans) -> tuple[float, float]:
    """(steps per wall second, CPU microseconds per step)."""
    env = gym.make(env_id)
    replay(env, plans[:1])  # warm: first-call imports and caches are not the steady state
    start, cpu = time.perf_counter(), time.process_time()
    steps = replay(env, plans)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    env.close()
    return steps / elapsed, 1e6 * cpu / steps


def over_socket(url: str, server_pid: int, plans, sessions: int) -> tuple[float, float]:
    """(steps per wall second, CPU microseconds per step of client and server together)."""
    from ragen_envs.serve import Client

    shares = [plans[i::sessions] for i in range(sessions)]
    clients = [Client(url) for _ in range(sessions)]
    for client in clients:
        replay(client, plans[:1])
    with ThreadPoolExecutor(sessions) as pool:
        start, cpu, server_cpu = time.perf_counter(), time.process_time(), cpu_seconds(server_pid)
        steps = sum(pool.map(replay, clients, shares))
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu + cpu_seconds(server_pid) - server_cpu
    for client in clients:
        client.close()
    return steps / elapsed, 1e6 * cpu / steps


def start_server(env_id: str, sessions: int, root: Path = ROOT) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragen_envs.serve", "--env", env_id, "--port", "0", "--max-sessions", str(sessions + 2)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    line = proc.stdout.readline()
    match = re.search(r" on (http://\S+) ", line)
    if not match:
        proc.kill()
        raise SystemExit(f"server for {env_id} did not start")
    return proc, match.group(1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", nargs="*", default=list(DEFAULT_ENVS))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sessions", type=int, default=8)
    p.add_argument("--baseline", type=Path, default=None, help="another checkout whose server runs beside this one")
    args = p.parse_args()
    roots = {"": ROOT} if args.baseline is None else {" (this)": ROOT, " (baseline)": args.baseline.resolve()}
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"| env | in process: steps/s (CPU µs/step) | socket, 1 session | ratio | socket, {args.sessions} sessions"
        " | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for env_id in args.envs:
        plans = plan(env_id, DEFAULT_ENVS.get(env_id, 16))
        servers = {name: start_server(env_id, args.sessions, root) for name, root in roots.items()}
        try:
            local: list[tuple[float, float]] = []
            runs: dict[str, dict[str, list[tuple[float, float]]]] = {name: {"one": [], "many": []} for name in roots}
            for _ in range(args.rounds):  # interleaved: the shared CPU's load hits every contender alike
                local.append(in_process(env_id, plans))
                for name, (proc, url) in servers.items():
                    runs[name]["one"].append(over_socket(url, proc.pid, plans, 1))
                    runs[name]["many"].append(over_socket(url, proc.pid, plans, args.sessions))
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait(30)
        lo, lo_cpu = statistics.median(r for r, _ in local), statistics.median(c for _, c in local)
        for name in roots:
            (o, o_cpu), (m, m_cpu) = (
                (statistics.median(r for r, _ in runs[name][k]), statistics.median(c for _, c in runs[name][k]))
                for k in ("one", "many")
            )
            print(
                f"| {env_id}{name} | {lo:,.0f} ({lo_cpu:,.0f}) | {o:,.0f} ({o_cpu:,.0f}) | {o / lo:.2f} |"
                f" {m:,.0f} ({m_cpu:,.0f}) | {m / lo:.2f} |",
                flush=True,
            )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
