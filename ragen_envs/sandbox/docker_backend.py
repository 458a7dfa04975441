"""The Docker backend: one throw-away container per run, through the docker SDK (``pip install 'ragen-envs[docker]'``).

Each container: ``--network none``, read-only root, a tmpfs ``/work`` (also ``/tmp``) of the file-size limit
owned by an unprivileged uid, ``--cap-drop ALL``, ``no-new-privileges``, ``--pids-limit``, ``--memory`` with
swap equal (no swap), ``--cpus`` (the CPU quota), ulimits (CPU, file size, open files, no core dumps), the logging driver off
(output is streamed and capped by the host, never stored by the daemon), and removal in a ``finally`` —
plus a sweep of containers left by processes that died (label ``ragen-sandbox.pid``).

Image: any image with a Python 3 at ``python`` works (``RAGEN_SANDBOX_DOCKER_IMAGE``). With no registry, the
default ``ragen-sandbox:local`` is built on first use by ``docker import`` of a tiny rootfs (folders and the
``/lib``-style links only) and the host's ``/usr`` is bind-mounted read-only into each container, so the
system interpreter runs inside. That needs the engine on this host (a local socket), which is the case the
default covers.
"""

from __future__ import annotations

import base64
import io
import os
import select
import socket
import struct
import tarfile
import threading
import time
import zlib
from functools import lru_cache, partial
from pathlib import Path

from ragen_envs.sandbox.base import (
    Backend,
    CappedOutput,
    Captured,
    Limits,
    Result,
    WallClock,
    as_bytes,
    classify,
    launcher_args,
)
from ragen_envs.sandbox.bwrap import LAUNCHER_SOURCE

DEFAULT_IMAGE = "ragen-sandbox:local"
SANDBOX_UID = 65534
LABEL = "ragen-sandbox.pid"
START_ATTEMPTS = 3
"""Containers tried when the runtime refuses to start one (see ``DockerBackend._start``)."""
_CHUNK = 96 * 1024  # below the kernel's 128 KiB limit on one environment string

# Runs first in the container: rebuild the launcher, program and stdin from the environment, then hand over.
BOOTSTRAP = """
import os, sys, zlib, base64
def take(prefix):
    keys = sorted((k for k in os.environ if k.startswith(prefix)), key=lambda k: int(k[len(prefix):]))
    data = zlib.decompress(base64.b64decode("".join(os.environ.pop(k) for k in keys)))
    return data
launcher, program, stdin = take("RAGEN_L"), take("RAGEN_P"), take("RAGEN_I")
def scrub():
    # os.environ.pop leaves the process's initial environment block (what /proc/self/environ shows, and what a
    # forked candidate inherits) intact: zero the RAGEN_* entries in it, so stdin (a runner's per-run secret
    # travels there) and the program are readable only where they are handed over.
    import ctypes
    fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
    start, end = int(fields[47]), int(fields[48])  # env_start, env_end: fields 50 and 51 of proc(5)
    offset = 0
    for entry in ctypes.string_at(start, end - start).split(b"\\0"):
        if entry.startswith(b"RAGEN_"):
            ctypes.memset(start + offset, 0, len(entry))
        offset += len(entry) + 1
    if any(e.startswith(b"RAGEN_") for e in open("/proc/self/environ", "rb").read().split(b"\\0")):
        raise SystemExit("the sandbox could not scrub its environment")
scrub()
with open("/work/.main.py", "wb") as f:
    f.write(program)
with open("/work/.stdin", "wb") as f:
    f.write(stdin)
fd = os.open("/work/.stdin", os.O_RDONLY)
os.dup2(fd, 0)
os.close(fd)
os.unlink("/work/.stdin")
sys.argv = ["launcher", *sys.argv[1:], "/work/.main.py"]
del take, scrub, program, stdin, f, fd
exec(compile(launcher, "/sandbox/launcher.py", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
"""


def _import_docker():
    try:
        import docker
    except ImportError as exc:
        raise ImportError("the Docker backend needs the docker SDK: pip install 'ragen-envs[docker]'") from exc
    return docker


def _encode(prefix: str, data: bytes) -> dict[str, str]:
    packed = base64.b64encode(zlib.compress(data)).decode()
    return {f"{prefix}{i}": packed[at : at + _CHUNK] for i, at in enumerate(range(0, max(len(packed), 1), _CHUNK))}


def rootfs_tarball() -> bytes:
    """A minimal root filesystem: empty folders plus the host's top-level links into ``/usr``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ("usr", "work", "tmp", "etc", "proc", "dev", "sys", "sandbox"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name in ("work", "tmp") else 0o755
            tar.addfile(info)
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            path = Path("/") / name
            if path.is_symlink():
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
                tar.addfile(info)
        passwd = b"nobody:x:65534:65534:nobody:/work:/usr/sbin/nologin\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
    return buf.getvalue()


def build_local_image(client, tag: str = DEFAULT_IMAGE) -> str:
    """``docker import`` the minimal rootfs as ``tag`` (no registry needed); returns the tag."""
    client.api.import_image_from_data(rootfs_tarball(), repository=tag.split(":")[0], tag=tag.split(":")[1])
    return tag


class DockerBackend(Backend):
    """Run code in a fresh, locked-down container per call; see the module docstring."""

    name = "docker"

    def __init__(
        self,
        image: str | None = None,
        *,
        base_url: str | None = None,
        python: str = "/usr/bin/python3",
        bind_host_usr: bool | None = None,
    ) -> None:
        docker = _import_docker()
        self.image = image or os.environ.get("RAGEN_SANDBOX_DOCKER_IMAGE", DEFAULT_IMAGE)
        self.client = docker.DockerClient(base_url=base_url, timeout=120) if base_url else docker.from_env(timeout=120)
        self.python = python
        self.bind_host_usr = (self.image == DEFAULT_IMAGE) if bind_host_usr is None else bind_host_usr
        self._ensure_image()
        self._sweep()

    @classmethod
    def available(cls) -> bool:
        """Backend protocol's available: whether a Docker engine answers (at ``DOCKER_HOST`` if set)."""
        return _engine_reachable(os.environ.get("DOCKER_HOST", ""))

    def _ensure_image(self) -> None:
        docker = _import_docker()
        try:
            self.client.images.get(self.image)
        except docker.errors.ImageNotFound:
            if self.image != DEFAULT_IMAGE:
                raise
            build_local_image(self.client, self.image)

    def _sweep(self) -> None:
        """Remove containers whose creating process is gone (a crash between create and remove)."""
        for container in self.client.containers.list(all=True, filters={"label": LABEL}):
            try:
                pid = int(container.labels.get(LABEL, "0"))
                host = container.labels.get("ragen-sandbox.host", "")
                if host == socket.gethostname() and pid != os.getpid() and not _alive(pid):
                    container.remove(force=True)
            except Exception:  # noqa: BLE001 - best effort
                pass

    def run(self, code: str, stdin: str | bytes = "", limits: Limits | None = None) -> Result:
        """Backend protocol's run: execute ``code`` as a Python program fed ``stdin``, under ``limits`` (default
        :class:`Limits`), in a fresh Docker container; returns the :class:`Result`."""
        docker = _import_docker()
        limits = limits or Limits()
        environment = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/work",
            "LANG": "C.UTF-8",
            **_encode("RAGEN_L", LAUNCHER_SOURCE),
            **_encode("RAGEN_P", code.encode("utf-8", "surrogatepass")),
            **_encode("RAGEN_I", as_bytes(stdin)),
        }
        cpu = max(1, round(limits.cpu_s))
        disk = limits.file_size_mb << 20
        command = [self.python, "-I", "-S", "-c", BOOTSTRAP, *launcher_args(limits)]
        tmpfs_opts = f"size={disk},mode=1777,uid={SANDBOX_UID},gid={SANDBOX_UID}"
        create = partial(
            self.client.containers.create,
            self.image,
            command,
            user=f"{SANDBOX_UID}:{SANDBOX_UID}",
            environment=environment,
            network_mode="none",
            read_only=True,
            tmpfs={"/work": tmpfs_opts, "/tmp": tmpfs_opts},
            working_dir="/work",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=limits.processes,
            mem_limit=limits.memory_mb << 20,
            memswap_limit=limits.memory_mb << 20,
            nano_cpus=round(limits.cpus * 1e9),
            ulimits=[
                docker.types.Ulimit(name="cpu", soft=cpu, hard=cpu + 1),
                docker.types.Ulimit(name="fsize", soft=disk, hard=disk),
                docker.types.Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
                docker.types.Ulimit(name="core", soft=0, hard=0),
            ],
            log_config=docker.types.LogConfig(type="none"),
            volumes={"/usr": {"bind": "/usr", "mode": "ro"}} if self.bind_host_usr else None,
            hostname="sandbox",
            ipc_mode="private",
            labels={LABEL: str(os.getpid()), "ragen-sandbox.host": socket.gethostname()},
            detach=True,
        )
        container, sock = self._start(create)
        try:
            raw = getattr(sock, "_sock", sock)
            started = time.monotonic()
            captured = self._collect(container, raw, limits, started)
            try:
                sock.close()
            except OSError:
                pass
            state = self.client.api.inspect_container(container.id)["State"]
            oom = bool(state.get("OOMKilled"))
        finally:
            try:
                container.remove(force=True)
            except docker.errors.APIError:
                pass
        exit_code = captured.returncode
        if exit_code > 128:
            exit_code = -(exit_code - 128)
        violation = classify(captured, exit_code=exit_code, memory_event="oom" if oom else None, cpu_limit_s=cpu)
        return Result.from_captured(
            captured,
            violation,
            backend=self.name,
            enforcement=f"docker: cgroup memory+pids+cpu (container), ulimits, uid {SANDBOX_UID}, network none, cap-drop ALL",
            exit_code=exit_code,
            wall_s=time.monotonic() - started,
        )

    def _start(self, create):
        """A created and started container with its attached output socket.

        runc's init process runs inside the container's pids cgroup before it becomes the program, and its Go
        runtime's threads count there: under a small ``processes`` limit on a busy machine it can hit the limit and
        die, and Docker then refuses the start ("cannot start a stopped process"). That is the runtime failing, not
        the program, so a fresh container is tried, at most ``START_ATTEMPTS`` times; any other error is raised."""
        docker = _import_docker()
        for attempt in range(START_ATTEMPTS):
            container = create()
            try:
                sock = container.attach_socket(params={"stdout": 1, "stderr": 1, "stream": 1})
                container.start()
                return container, sock
            except docker.errors.APIError as error:
                try:
                    container.remove(force=True)
                except docker.errors.APIError:
                    pass
                if "cannot start a stopped process" not in str(error) or attempt == START_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")  # the loop returns or raises

    def _collect(self, container, raw, limits: Limits, started: float) -> Captured:
        """Demultiplex the attach stream into stdout/stderr with the output cap and the wall deadline."""
        clock = WallClock(limits.wall_s, started)
        output = CappedOutput(limits.output_bytes, clock)
        pending = b""
        timed_out = False
        while True:
            remaining = clock.deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([raw], [], [], remaining)
            if not ready:
                continue
            try:
                chunk = raw.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                break
            if not chunk:
                output.stderr_closed()
                break
            pending += chunk
            while len(pending) >= 8:
                stream, size = pending[0], struct.unpack(">I", pending[4:8])[0]
                if len(pending) < 8 + size:
                    break
                frame, pending = pending[8 : 8 + size], pending[8 + size :]
                output.add(frame, stderr=stream != 1)
            if output.exceeded:
                break
        if timed_out or output.exceeded:
            # Stop reading first: the daemon does not finish a container whose output it cannot deliver.
            try:
                raw.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            _kill(container)
        try:
            status = container.wait(timeout=max(1.0, clock.deadline - time.monotonic() + 1.0))["StatusCode"]
        except Exception:  # noqa: BLE001 - a wait timeout surfaces as a requests/urllib3 error
            timed_out = True
            _kill(container)
            status = container.wait(timeout=120)["StatusCode"]
        return output.captured(status, timed_out, started)

    def close(self) -> None:
        """Backend protocol's close: close the Docker client."""
        self.client.close()


def _kill(container) -> None:
    try:
        container.kill()
    except Exception:  # noqa: BLE001 - already gone
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_probe_lock = threading.Lock()


@lru_cache(maxsize=4)
def _engine_reachable(docker_host: str) -> bool:
    """An engine answers a ping through the docker SDK (cached per ``DOCKER_HOST``)."""
    try:
        docker = _import_docker()
    except ImportError:
        return False
    with _probe_lock:
        try:
            client = docker.from_env(timeout=3)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except Exception:  # noqa: BLE001 - any failure means "not reachable"
            return False
