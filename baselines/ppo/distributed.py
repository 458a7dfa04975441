"""The learner across processes: which device and collective backend each ``torchrun`` rank uses, and the PyTorch
engine that reduces the gradients (DDP, or FSDP2 for models whose training state does not fit one GPU).

:func:`plan` is the decision, a pure function of the launch (``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``), the
configured ``device`` and ``data_parallel``, and the GPUs the node shows; :class:`Distributed` carries it out. On
GPUs rank *r* of a node takes ``cuda:LOCAL_RANK`` and the collectives run over NCCL on that device; on CPU over
gloo. The CPU tests run the same code with gloo in several processes.

Gradients are *summed* across ranks, not averaged: every loss is already divided by the global token (or
sequence) count (``Distributed.sum`` of each rank's share), so N ranks make the update one process makes on the
combined batch. Both engines are told so (a summing DDP communication hook; FSDP2 with a divide factor of 1).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from baselines.ppo.config import DATA_PARALLEL


@dataclasses.dataclass(frozen=True)
class Plan:
    """Where one process of a launch runs and how it talks to the others."""

    world: int
    rank: int
    local_rank: int
    device: str
    """``cpu``, ``cuda`` (one process: the current device) or ``cuda:<LOCAL_RANK>``."""
    backend: str | None
    """``nccl`` on GPUs, ``gloo`` on CPU; None for a single process."""
    wrapper: str
    """``none`` (one process), ``ddp`` or ``fsdp2``."""


def plan(device: str, data_parallel: str, environ: Mapping[str, str], cuda_devices: int) -> Plan:
    """The plan of the process that sees ``environ`` (torchrun's variables) and ``cuda_devices`` GPUs.

    Raises ``ValueError`` naming the fix when the launch cannot work: one explicit GPU for several ranks, or more
    ranks on a node than it has GPUs.
    """
    if data_parallel not in DATA_PARALLEL:
        raise ValueError(f"data_parallel must be one of {', '.join(DATA_PARALLEL)}, got {data_parallel!r}")
    world = int(environ.get("WORLD_SIZE", "1"))
    rank = int(environ.get("RANK", "0"))
    local_rank = int(environ.get("LOCAL_RANK", str(rank)))
    resolved = ("cuda" if cuda_devices else "cpu") if device == "auto" else device
    if world == 1:
        return Plan(1, 0, 0, resolved, None, "none")
    if not resolved.startswith("cuda"):
        return Plan(world, rank, local_rank, resolved, "gloo", data_parallel)
    if resolved != "cuda":
        raise ValueError(
            f"device={device!r} would put all {world} ranks on one GPU: use device='cuda' or 'auto' "
            "(each rank then takes cuda:LOCAL_RANK), or CUDA_VISIBLE_DEVICES to choose the GPUs"
        )
    if local_rank >= cuda_devices:
        raise ValueError(
            f"LOCAL_RANK {local_rank} has no GPU of its own: this node shows {cuda_devices}; start at most "
            f"that many processes per node (torchrun --nproc_per_node {cuda_devices})"
        )
    return Plan(world, rank, local_rank, f"cuda:{local_rank}", "nccl", data_parallel)


def _sum_hook(state, bucket):  # unannotated: DDP checks the annotations, and these would be strings here
    """DDP communication hook: all-reduce a gradient bucket as a sum (DDP's own hook divides by the world)."""
    work = torch.distributed.all_reduce(bucket.buffer(), async_op=True)
    return work.get_future().then(lambda future: future.value()[0])


def _layer_classes(model: torch.nn.Module) -> set[str]:
    """Class names of the transformer blocks a transformers model declares unsplittable (its decoder layers)."""
    names: set[str] = set()
    for module in model.modules():
        names.update(getattr(module, "_no_split_modules", None) or ())
    return names


class Distributed:
    """Rank, world and device of this process (:func:`plan`), the collectives the learner needs, and the engine
    that wraps a model for the update; a single process is the identity throughout."""

    def __init__(self, device: str = "auto", data_parallel: str = "ddp") -> None:
        cuda = torch.cuda.device_count() if torch.cuda.is_available() else 0
        self.plan = plan(device, data_parallel, os.environ, cuda)
        self.world, self.rank = self.plan.world, self.plan.rank
        self.device = torch.device(self.plan.device)
        if self.device.type == "cuda" and self.device.index is not None:
            torch.cuda.set_device(self.device)  # NCCL and the object collectives use the current device
        self._owns_group = self.world > 1 and not torch.distributed.is_initialized()
        if self._owns_group:
            torch.distributed.init_process_group(self.plan.backend)

    def close(self) -> None:
        """Destroy the process group this object started (idempotent): a gloo group left to interpreter exit can
        abort the process as its background threads are torn down. No barrier: the trainer closes in a ``finally``,
        and a rank unwinding from an error must exit (so torchrun stops the others), not wait for ranks that never
        arrive."""
        if self._owns_group and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        self._owns_group = False

    @property
    def main(self) -> bool:
        """Whether this process is rank 0, the one that logs and saves."""
        return self.rank == 0

    @property
    def sharded(self) -> bool:
        """Whether the models' parameters are sharded over the ranks (FSDP2)."""
        return self.plan.wrapper == "fsdp2"

    def sum(self, value: float) -> float:
        """``value`` summed over every rank (reduced on this rank's device: NCCL reduces only GPU tensors)."""
        if self.world == 1:
            return value
        tensor = torch.tensor([value], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(tensor)
        return float(tensor)

    def max(self, value: int) -> int:
        """The largest ``value`` of any rank."""
        if self.world == 1:
            return value
        tensor = torch.tensor([value], dtype=torch.int64, device=self.device)
        torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.MAX)
        return int(tensor)

    def gather(self, obj: Any) -> list[Any]:
        """``obj`` of every rank, in rank order."""
        if self.world == 1:
            return [obj]
        out: list[Any] = [None] * self.world
        torch.distributed.all_gather_object(out, obj)
        return out

    # ---- the engine ------------------------------------------------------------------------------------------
    def wrap(self, module: torch.nn.Module, unused_parameters: bool = False) -> torch.nn.Module:
        """``module`` as the update runs it: itself in one process, under DDP, or sharded in place by FSDP2 (build
        its optimiser afterwards: FSDP2 replaces the parameters by their shards). ``unused_parameters``: some
        parameters take no part in the loss (the critic's LM head), which DDP must be told."""
        if self.plan.wrapper == "none":
            return module
        if self.plan.wrapper == "ddp":
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None
            wrapped = DistributedDataParallel(
                module, device_ids=ids, broadcast_buffers=False, find_unused_parameters=unused_parameters
            )
            wrapped.register_comm_hook(None, _sum_hook)
            return wrapped
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh(self.device.type, (self.world,))
        layers = _layer_classes(module)
        taken: set[int] = set()  # modules in a unit already
        for sub in list(module.modules())[1:]:
            if type(sub).__name__ in layers and id(sub) not in taken:
                fully_shard(sub, mesh=mesh)
                taken.update(id(m) for m in sub.modules())
        # the rest (embeddings, final norm, LM head, value head) one unit each, called with tensors: the root's
        # forward takes token lists, which carry no hook for its own parameters' gradient reduction. Modules that
        # share a parameter (tied input and output embeddings) form one unit.
        units: list[list[torch.nn.Module]] = []
        owner: dict[int, list[torch.nn.Module]] = {}
        for sub in list(module.modules())[1:]:
            own = [id(p) for p in sub.parameters(recurse=False)]
            if id(sub) in taken or not own:
                continue
            unit = next((owner[p] for p in own if p in owner), None)
            if unit is None:
                unit = []
                units.append(unit)
            unit.append(sub)
            owner.update(dict.fromkeys(own, unit))
            taken.update(id(m) for m in sub.modules())
        for unit in units:
            fully_shard(unit if len(unit) > 1 else unit[0], mesh=mesh)
        fully_shard(module, mesh=mesh)
        for sub in self._fsdp_modules([module]):
            sub.set_gradient_divide_factor(1.0)
            sub.set_force_sum_reduction_for_comms(True)  # plain sums: gloo has no pre-multiplied sum
        return module

    @staticmethod
    def _fsdp_modules(models: Iterable[torch.nn.Module | None]) -> list:
        from torch.distributed.fsdp import FSDPModule

        return [m for model in models if model is not None for m in model.modules() if isinstance(m, FSDPModule)]

    def accumulate(self, modules: Iterable[torch.nn.Module | None], last: bool):
        """The context of one micro-batch's backward: gradients reduced across ranks only on the ``last`` one of a
        minibatch (DDP's ``no_sync``, FSDP2's gradient sync switched off before)."""
        modules = [m for m in modules if m is not None]
        if self.plan.wrapper == "ddp" and not last:
            stack = contextlib.ExitStack()
            for module in modules:
                stack.enter_context(module.no_sync())
            return stack
        for module in self._fsdp_modules(modules) if self.sharded else []:
            module.set_requires_gradient_sync(last, recurse=False)
        return contextlib.nullcontext()

    def unshard(self, models: Iterable[torch.nn.Module | None]) -> None:
        """FSDP2: gather every shard, on every rank, and keep the full weights until :meth:`reshard`, so that the
        rank-local forwards (generation, scoring, the MI family) need no collective. No-op otherwise."""
        if not self.sharded:
            return
        for module in self._fsdp_modules(models):
            module.set_reshard_after_forward(False, recurse=False)
            module.unshard()

    def reshard(self, models: Iterable[torch.nn.Module | None]) -> None:
        """FSDP2: free the gathered weights again (the update all-gathers layer by layer). No-op otherwise."""
        if not self.sharded:
            return
        for module in self._fsdp_modules(models):
            module.reshard()
            module.set_reshard_after_forward(True, recurse=False)

    def state_dicts(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
        """The model's and optimiser's state to save, whole: under FSDP2 every rank hands in its shards (every rank
        calls). The layout is the unsharded one, so a checkpoint resumes under any engine and world size."""
        if not self.sharded:
            return model.state_dict(), optimizer.state_dict()
        state = optimizer.state_dict()
        state["state"] = {pid: {k: _whole(v) for k, v in s.items()} for pid, s in state["state"].items()}
        return {k: _whole(v) for k, v in model.state_dict().items()}, state

    def load_state_dicts(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, weights: dict,
                         optimizer_state: dict) -> None:  # fmt: skip
        """Load what :meth:`state_dicts` saved (every rank holds the whole of it; FSDP2 keeps its own shards)."""
        if self.sharded:
            own = model.state_dict()
            weights = {k: _like(v, own[k]) if k in own else v for k, v in weights.items()}
            params = [p for group in optimizer.param_groups for p in group["params"]]
            optimizer_state = {
                **optimizer_state,
                "state": {pid: {k: _like(v, params[int(pid)]) for k, v in s.items()}
                          for pid, s in optimizer_state["state"].items()},
            }  # fmt: skip
        model.load_state_dict(weights)
        optimizer.load_state_dict(optimizer_state)


def _whole(tensor: Any) -> Any:
    """A sharded tensor gathered whole, on the CPU (a collective: every rank calls); anything else as it is."""
    from torch.distributed.tensor import DTensor

    return tensor.full_tensor().cpu() if isinstance(tensor, DTensor) else tensor


def _like(tensor: Any, model: Any) -> Any:
    """``tensor`` (whole) sharded as ``model`` is, when ``model`` is sharded and of its shape (AdamW's moments;
    not its step count)."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if not isinstance(model, DTensor) or not isinstance(tensor, torch.Tensor) or tensor.shape != model.shape:
        return tensor
    return distribute_tensor(tensor.to(model.device_mesh.device_type), model.device_mesh, model.placements)
