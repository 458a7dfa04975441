"""The Docker backend, against a private daemon this module starts and stops (no bridge, no iptables rules,
its own data/exec root and socket); the image is built locally by ``docker import`` (no registry)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from ragen_envs import sandbox

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    pytest.importorskip("docker", reason="the docker SDK is not installed (pip install 'ragen-envs[docker]')")
    if shutil.which("dockerd") is None:
        pytest.skip("dockerd is not installed (apt-get install docker.io)")
    if os.geteuid() != 0:
        pytest.skip("starting a private dockerd needs root")
    root = tmp_path_factory.mktemp("dockerd")
    sock = root / "docker.sock"
    log = open(root / "dockerd.log", "wb")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(
        [
            "dockerd",
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-forward=false",
            "--data-root",
            str(root / "data"),
            "--exec-root",
            str(root / "exec"),
            "--host",
            f"unix://{sock}",
            "--pidfile",
            str(root / "docker.pid"),
        ],  # fmt: skip
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    import docker

    deadline = time.monotonic() + 60
    while True:
        try:
            client = docker.DockerClient(base_url=f"unix://{sock}", timeout=10)
            if client.ping():
                break
        except Exception:  # noqa: BLE001 - not up yet
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log.close()
            tail = (root / "dockerd.log").read_text(errors="replace")[-1500:]
            pytest.skip(f"dockerd could not start on this machine: {tail}")
        time.sleep(0.2)
    yield f"unix://{sock}", client
    client.close()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()
    shutil.rmtree(root / "data", ignore_errors=True)


@pytest.fixture(scope="module")
def backend(daemon):
    from ragen_envs.sandbox.docker_backend import DockerBackend

    b = DockerBackend(base_url=daemon[0])
    yield b
    b.close()


def no_containers_left(client) -> bool:
    return client.containers.list(all=True, filters={"label": "ragen-sandbox.pid"}) == []


def test_runs_code_with_stdin(backend, daemon):
    res = backend.run("print(input()[::-1])", "abc")
    assert res.ok and res.stdout == "cba\n" and res.backend == "docker" and not res.unsafe
    assert no_containers_left(daemon[1])


def test_is_listed_when_the_engine_is_reachable(daemon, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", daemon[0])
    assert "docker" in sandbox.available_backends()


def test_unprivileged_read_only_scrubbed(backend, monkeypatch):
    monkeypatch.setenv("RAGEN_TEST_SECRET", "s3cret")
    code = """
import os
denied = []
for path in ['/usr/evil', '/etc/evil', '/evil', '/bin/evil']:
    try:
        open(path, 'w').write('x')
    except OSError:
        denied.append(path)
open('/work/ok', 'w').write('fine')
status = open('/proc/self/status').read()
print(os.getuid(), len(denied), 's3cret' in str(os.environ), [l for l in status.splitlines() if l.startswith(('CapEff', 'NoNewPrivs'))])
"""
    res = backend.run(code)
    assert res.ok, res
    assert res.stdout.startswith("65534 4 False"), res.stdout
    assert "'CapEff:\\t0000000000000000'" in res.stdout and "'NoNewPrivs:\\t1'" in res.stdout


def test_network_none(backend):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(3)
    port = server.getsockname()[1]
    accepted = []
    t = threading.Thread(target=lambda: accepted.append(_accept(server)))
    t.start()
    code = f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n    print('connected')\nexcept OSError as e:\n    print('blocked')"
    res = backend.run(code)
    t.join()
    server.close()
    assert res.stdout == "blocked\n" and accepted == [None]


def _accept(server):
    try:
        return server.accept()
    except OSError:
        return None


def test_limits_memory_processes_timeout_output(backend, daemon):
    limits = sandbox.Limits(wall_s=3, memory_mb=128, processes=16, output_bytes=1000)
    res = backend.run("chunks = []\nwhile True:\n    chunks.append(b'x' * (8 << 20))", limits=limits)
    assert res.violation == "memory", res
    res = backend.run(
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass", limits=limits
    )
    assert res.violation in ("processes", "timeout") and res.exit_code != 0, res
    res = backend.run("while True:\n    pass", limits=limits)
    assert res.timed_out and res.violation == "timeout"
    res = backend.run("while True:\n    print('x' * 1000)", limits=limits)
    assert res.violation == "output" and len(res.stdout) == 1000
    assert no_containers_left(daemon[1])
    assert backend.run("print('next')").stdout == "next\n"


def test_codeexec_runs_on_docker(daemon, monkeypatch):
    from ragen_envs.code.env import CodeExecEnv

    monkeypatch.setenv("DOCKER_HOST", daemon[0])
    sandbox._cache.pop(f"docker@{os.getpid()}", None)
    env = CodeExecEnv(backend="docker")
    env.reset(seed=2)
    *_, info = env.step(env.oracle_response())
    assert info["success"] and info["sandbox_backend"] == "docker"
    sandbox._cache.pop(f"docker@{os.getpid()}", None)


SECRET_PROBE = """
import base64, os, zlib
def found(environ):
    chunks = {}
    for entry in environ.split(b"\\0"):
        key, _, value = entry.partition(b"=")
        if key.startswith(b"RAGEN_I"):
            chunks[int(key[7:])] = value
    try:
        data = zlib.decompress(base64.b64decode(b"".join(chunks[k] for k in sorted(chunks))))
    except Exception:
        data = b""
    return b"NONCE-" in data or b"NONCE-" in environ
paths = ["/proc/self/environ", "/proc/1/environ"]
pid = os.fork()
if pid == 0:  # a forked child, as a candidate under the CodeExec runner is
    os._exit(1 if any(found(open(p, "rb").read()) for p in paths if os.access(p, os.R_OK)) else 0)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status), "self", any(found(open(p, "rb").read()) for p in paths))
"""


def test_the_per_run_secret_is_not_in_the_container_environment(backend):
    # stdin carries the CodeExec runner's nonce at its end; nothing in the container may show it to the program
    res = backend.run(SECRET_PROBE, "x" * 100 + "NONCE-0123456789abcdef")
    assert res.ok, res
    assert res.stdout.strip() == "child 0 self False", res.stdout


def test_a_container_the_runtime_refuses_to_start_is_replaced_and_other_errors_are_raised():
    """runc's init can die under a small pids limit before the program runs; Docker then refuses the start."""
    docker = pytest.importorskip("docker")
    from ragen_envs.sandbox.docker_backend import START_ATTEMPTS, DockerBackend

    class Container:
        def __init__(self, error):
            self.error, self.removed = error, False

        def attach_socket(self, params):
            return "socket"

        def start(self):
            if self.error:
                raise docker.errors.APIError(self.error)

        def remove(self, force):
            self.removed = True

    backend = DockerBackend.__new__(DockerBackend)  # no engine needed: only the start protocol is exercised
    made = []

    def create(errors):
        def make():
            made.append(Container(errors[len(made)] if len(made) < len(errors) else None))
            return made[-1]

        return make

    container, sock = backend._start(create(["cannot start a stopped process: unknown"]))
    assert container is made[1] and made[0].removed and sock == "socket"
    made.clear()
    with pytest.raises(docker.errors.APIError, match="no such image"):
        backend._start(create(["no such image"]))
    assert len(made) == 1 and made[0].removed
    made.clear()
    with pytest.raises(docker.errors.APIError, match="stopped process"):
        backend._start(create(["cannot start a stopped process"] * START_ATTEMPTS))
    assert len(made) == START_ATTEMPTS
