"""The runner of a pre-registered training experiment: what is left of its design, ``--jobs`` runs at a time.

A design module (:mod:`~baselines.ppo.experiments.miniature`, :mod:`~baselines.ppo.experiments.runaway`)
names its runs and their order (``status()``), which run duplicates an earlier one (``reused_from``) and how one
run trains (``execute``, a module-level function so a worker process can run it). Each finished run is one JSON
data file, written atomically; a run already there is never run again, and a run interrupted midway resumes from
its checkpoint (the learner's exact resume), so an experiment spans sessions: rerun the same command.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
MODEL = ROOT / "baselines" / "tiny" / "model"


@dataclass(frozen=True)
class DesignRun:
    """One training run of a design. A design subclasses it in its own module, whose ``DATA``, ``SCRATCH``,
    ``SETTING``, ``ARMS``, ``MODEL`` and ``COMMAND`` the run reads (looked up at use, so a test can point them
    elsewhere)."""

    stage: int
    arm: str
    coef: float
    seed: int

    @property
    def design(self) -> ModuleType:
        """The module of the design this run belongs to."""
        return sys.modules[type(self).__module__]

    @property
    def name(self) -> str:
        """The run's name, ``stage<N>/<arm>_c<coef>/seed<S>``, also its path under the data and scratch folders."""
        return f"stage{self.stage}/{self.arm}_c{self.coef:g}/seed{self.seed}"

    @property
    def data(self) -> Path:
        """The run's data file, written when it finishes."""
        return self.design.DATA / f"{self.name}.json"

    @property
    def fields(self) -> dict[str, Any]:
        """The run's identity as its data file records it."""
        return {"stage": self.stage, "arm": self.arm, "entropy_coef": self.coef, "seed": self.seed}

    def config(self, out_dir: Path):
        """The learner config of this run, writing its logs and checkpoint to ``out_dir``."""
        from baselines.ppo.config import PPOConfig

        d = self.design
        values = {**d.SETTING, **d.ARMS[self.arm], "entropy_coef": self.coef, "seed": self.seed}
        return PPOConfig.from_dict({**values, "model": str(d.MODEL), "out_dir": str(out_dir)})


def split_done(runs: list[DesignRun]) -> tuple[list[DesignRun], list[DesignRun]]:
    """A design's planned runs split into those finished (their data file exists) and those still to do (a run whose
    coefficient is negative waits for c*)."""
    done = [r for r in runs if r.coef >= 0 and r.data.exists()]
    return done, [r for r in runs if r not in done]


def load_run(run: DesignRun) -> dict | None:
    """The run's data record, or None while it has not finished."""
    return json.loads(run.data.read_text()) if run.data.exists() else None


def execute_run(run: DesignRun) -> str:
    """Train one run (resuming its checkpoint) and write its data file; returns its name."""
    scratch = run.design.SCRATCH / run.name
    train_and_record(run.config(scratch), scratch, run.data, run.fields, run.design.COMMAND)
    return run.name


def copy_reused_run(run: DesignRun, source: DesignRun) -> None:
    """Store ``source``'s data as ``run``'s (the same run under the design's other name)."""
    record = load_run(source)
    record["run"] = run.fields
    record["reused_from"] = source.name
    write_record(run.data, record)


def commit_of(path: Path | None) -> str:
    """The last commit touching ``path`` (the checkout's HEAD for None), for a data file's provenance."""
    where = ["--", str(path)] if path is not None else []
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%h", *where], cwd=ROOT, capture_output=True, text=True,
                             timeout=30)  # fmt: skip
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def train_and_record(config, scratch: Path, data: Path, run_fields: dict[str, Any], command: str) -> None:
    """Train ``config`` (resuming its checkpoint in ``scratch``) on one torch thread and write ``data``: the
    run's fields, its config (paths written relative to the checkout), provenance and every logged row."""
    import torch

    from baselines.ppo.trainer import Trainer

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    started = time.time()
    Trainer(config).train(resume=True)
    rows = [json.loads(line) for line in (scratch / "metrics.jsonl").read_text().splitlines() if line.strip()]
    record = {
        "run": run_fields,
        "config": {
            **json.loads(config.to_json()),
            "model": "baselines/tiny/model",
            "out_dir": str(scratch.relative_to(ROOT)) if scratch.is_relative_to(ROOT) else str(scratch),
        },
        "model_commit": commit_of(MODEL),
        "code_commit": commit_of(None),
        "command": command,
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_s_this_process": round(time.time() - started, 1),
        "rows": rows,
    }
    write_record(data, record)


def write_record(path: Path, record: dict) -> None:
    """Write a data file atomically (a crash leaves the old file or none, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


class InProcess:
    """``--jobs 1``: each run in this process, one after the other (the same interface as the process pool)."""

    def submit(self, fn, *args) -> Future:
        """Run ``fn(*args)`` now; its result or exception in a finished future."""
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as error:  # handed to future.result(), as the pool would
            future.set_exception(error)
        return future

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc) -> None:
        return None


def drive(design: ModuleType, jobs: int, stage: str) -> None:
    """Run what is left of ``design``'s runs of ``stage`` (``"all"`` or a stage number), ``jobs`` at a time.

    ``design`` provides ``status() -> (c_star, why, done, todo)`` (runs whose ``coef`` is negative wait for c*),
    ``reused_from(run, c_star)``, ``copy_reused(run, source)`` and ``execute(run) -> name``.
    """
    running: dict = {}
    # two jobs: a pool of two processes (forked before torch is imported here); one job: in this process
    with ProcessPoolExecutor(max_workers=2) if jobs == 2 else InProcess() as pool:
        while True:
            c_star, why, done, todo = design.status()
            todo = [r for r in todo if stage == "all" or str(r.stage) == stage]
            for run in todo:
                source = design.reused_from(run, c_star)
                if source is not None and source.data.exists():
                    design.copy_reused(run, source)
                    print(f"reused {source.name} as {run.name}", flush=True)
            todo = [r for r in todo if not r.data.exists()]
            names = {f.name for f in running.values()}
            ready = [r for r in todo if r.coef >= 0 and r.name not in names and design.reused_from(r, c_star) is None]
            while ready and len(running) < jobs:
                run = ready.pop(0)
                print(f"start {run.name} at {time.strftime('%H:%M:%S', time.gmtime())} UTC", flush=True)
                running[pool.submit(design.execute, run)] = run
            if not running:
                if todo:
                    print("waiting for nothing: the remaining runs need c* (run stage 0 first)", flush=True)
                break
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in finished:
                run = running.pop(future)
                future.result()  # a failed run stops the experiment loudly; its checkpoint stays for the rerun
                print(f"done {run.name} at {time.strftime('%H:%M:%S', time.gmtime())} UTC", flush=True)


def cli(design: ModuleType, argv: list[str] | None = None) -> int:
    """The command line of a design module: ``[--jobs 1|2] [--stage 0|1|all] [--status]``; the exit code."""
    parser = argparse.ArgumentParser(description=(design.__doc__ or "").split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel (1 or 2; each uses one thread)")
    parser.add_argument("--stage", choices=("0", "1", "all"), default="all")
    parser.add_argument("--status", action="store_true", help="print what is done and what is left, run nothing")
    args = parser.parse_args(argv)
    refusal = check_jobs(args.jobs)
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    c_star, why, done, todo = design.status()
    print(f"c* = {c_star} ({why}); {len(done)} runs done, {len(todo)} to go", flush=True)
    if args.status:
        for run in todo:
            print("  todo", run.name if run.coef >= 0 else run.name.replace("c-1", "c*"))
        return 0
    drive(design, args.jobs, args.stage)
    c_star, why, done, todo = design.status()
    print(f"c* = {c_star} ({why}); {len(done)} runs done, {len(todo)} to go", flush=True)
    return 0


def check_jobs(jobs: int) -> str | None:
    """The one-line refusal of a ``--jobs`` value, or None when it is allowed."""
    if jobs not in (1, 2):
        return f"--jobs must be 1 or 2 (one thread per run on a 2-core budget), got {jobs}"
    if not (MODEL / "model.safetensors").exists():
        return f"the shipped tiny model is missing: {MODEL.relative_to(ROOT)}"
    return None
