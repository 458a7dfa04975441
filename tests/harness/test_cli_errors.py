"""Ordinary user mistakes end in one ``harness: error: …`` line naming the input and the fix, and exit status 2."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.cli import main
from tests.helpers.paths import ROOT, TINY_MODEL
from tests.helpers.ports import free_port


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), err
    return lines[0]


def test_train_with_a_misspelled_env_id_says_did_you_mean(capsys):
    args = ["train", "cpu-tiny", "--model", str(TINY_MODEL), "--env-id", "ragen/Bandti-v0"]
    assert main(args) == 2
    assert "Did you mean 'ragen/Bandit-v0'?" in one_error_line(capsys)


def test_openai_endpoint_refusing_connections(tmp_path, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    args = ["run", f"openai:{url}#m?max_retries=0", "--env", "ragen/Bandit-v0", "--episodes", "1", "--samples", "1"]
    assert main([*args, "--out", str(tmp_path), "--quiet", "--no-plots"]) == 2
    line = one_error_line(capsys)
    assert url in line and "Connection refused" in line and "is the server running" in line


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "not found"}')

    def log_message(self, *args):
        pass


def test_openai_endpoint_answering_404_hints_at_v1(tmp_path, capsys):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        args = ["run", f"openai:{base}#m", "--env", "ragen/Bandit-v0", "--episodes", "1", "--samples", "1"]
        assert main([*args, "--out", str(tmp_path), "--quiet", "--no-plots"]) == 2
    finally:
        server.shutdown()
    line = one_error_line(capsys)
    assert "HTTP 404" in line and f"did you mean openai:{base}/v1#m?" in line


def test_device_cuda_without_cuda(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    args = ["run", "tiny", "--env", "ragen/Bandit-v0", "--episodes", "1", "--samples", "1", "--device", "cuda"]
    assert main([*args, "--out", str(tmp_path), "--quiet"]) == 2
    line = one_error_line(capsys)
    assert "--device cuda: CUDA is not available" in line and "--device cpu" in line
    assert main(["train", "cpu-tiny", "--model", str(TINY_MODEL), "--device", "cuda"]) == 2
    assert "--device cuda: CUDA is not available" in one_error_line(capsys)


def test_hf_path_that_does_not_exist_or_holds_no_model(tmp_path, capsys):
    pytest.importorskip("transformers")
    common = ["--env", "ragen/Bandit-v0", "--out", str(tmp_path / "runs"), "--quiet"]
    assert main(["run", f"hf:{tmp_path}/nope", *common]) == 2
    assert f"hf:{tmp_path}/nope: no such directory" in one_error_line(capsys)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a model")
    assert main(["run", f"hf:{empty}", *common]) == 2
    assert "holds no model (no config.json)" in one_error_line(capsys)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("content", ["{}", "{not json", "[1, 2]", '{"run": {"agents": ["random"]}}'])
def test_a_broken_config_json_is_named(tmp_path, capsys, content):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(content)
    assert main(["run", "--resume", str(run_dir)]) == 2
    assert f"{run_dir / 'config.json'}: " in one_error_line(capsys)
    (run_dir / "summary.json").write_text(content)
    assert main(["report", str(run_dir)]) == 2
    assert f"{run_dir / 'summary.json'}: " in one_error_line(capsys)


def test_unreachable_webshop_server_url_is_named(tmp_path, capsys):
    url = f"http://127.0.0.1:{free_port()}/"
    kwargs = json.dumps({"transport": "http", "server_url": url})
    args = ["run", "random", "--env", "ragen/WebShop-v0", "--env-kwargs", kwargs, "--out", str(tmp_path), "--quiet"]
    assert main(args) == 2
    line = one_error_line(capsys)
    assert f"server_url={url!r}" in line and "ragen_envs.webshop.serve" in line


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _slow_run(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    args = ["random", "--env", "ragen/Sokoban-10x10-v0", "--episodes", "400", "--samples", "1", "--mi-samples", "0"]
    cmd = [sys.executable, "-m", "harness.cli", "run", *args, "--batch-size", "2", "--out", str(tmp_path)]
    cmd += ["--run-id", "slow", "--quiet", "--no-plots", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # SIGINT's default action restored in the child, as in a terminal: a shell that runs a job in the background
    # (pytest under `cmd &`) starts it with SIGINT ignored, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, preexec_fn=_default_sigint)  # fmt: skip
    path = tmp_path / "slow" / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not path.exists() or path.read_bytes().count(b"\n") < 4):
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    return proc, tmp_path / "slow"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_prints_how_to_resume(tmp_path, workers):
    proc, run_dir = _slow_run(tmp_path, "--workers", workers)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert err.splitlines() == [
        f"harness: error: interrupted; the finished episodes are kept: resume with `harness run --resume {run_dir}`"
    ]


def test_a_worker_is_spawned_with_ctrl_c_blocked_until_it_ignores_it():
    # A Ctrl-C reaching a worker still importing (before its initializer ignores SIGINT) printed that worker's
    # KeyboardInterrupt traceback under the parent's one-line message; blocked from the spawn, it cannot.
    import multiprocessing

    from harness.backends import _quiet_pool_class, process_pool

    spawn = multiprocessing.get_context("spawn")
    with _quiet_pool_class()(1, mp_context=spawn) as bare:  # no initializer: the mask as spawned
        assert signal.SIGINT in bare.submit(signal.pthread_sigmask, signal.SIG_BLOCK, []).result()
    with process_pool(1) as pool:  # after the worker's initializer: ignored, no longer blocked
        assert signal.SIGINT not in pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, []).result()
        assert pool.submit(signal.getsignal, signal.SIGINT).result() == signal.SIG_IGN
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the parent's mask is restored


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_workers_exit_after_kill_9_of_the_parent(tmp_path):
    proc, _ = _slow_run(tmp_path, "--workers", "2")
    workers = _children(proc.pid)
    assert len(workers) >= 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    left = [pid for pid in workers if _alive(pid)]
    for pid in left:  # do not leave them running if the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, "workers outlived the killed harness"


_HALF_WRITTEN_RESULT = """
import concurrent.futures, os, struct
from harness.backends import execute_processes, process_pool
from harness.config import EnvPlan, RunConfig
from harness.rollout import chunk_jobs, plan_jobs

pools = []

class Recorded(concurrent.futures.ProcessPoolExecutor):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        pools.append(self)

concurrent.futures.ProcessPoolExecutor = Recorded
config = RunConfig(agents=("random",), envs=(EnvPlan("ragen/Bandit-v0", episodes=8, samples=1),), mi_samples=0)

def emit(agent, lines):
    # what a worker killed in the middle of sending its result leaves: a length header and part of the body
    os.write(pools[0]._result_queue._writer.fileno(), struct.pack("!i", 1000) + b"x" * 10)
    raise KeyboardInterrupt

try:
    with process_pool(2) as pool:
        execute_processes(config, chunk_jobs(plan_jobs(config), 1), pool, emit)
except KeyboardInterrupt:
    print("interrupted")
"""


def test_interrupted_pool_exits_when_a_killed_worker_left_half_a_result():
    # Ctrl-C kills the workers; one killed while writing its result used to leave the pool's manager thread
    # waiting for the rest of the message, and interpreter exit waited for that thread forever.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _HALF_WRITTEN_RESULT], capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip
    assert proc.stdout.strip() == "interrupted", proc.stderr
