"""The learner's checkpoint: one safetensors file, tensors plus the rest of the state as JSON in its header.

A run folder is data another person may hand you, so resuming from it must never run code: nothing here
unpickles. :func:`save` splits a nested state (model and optimiser ``state_dict``s, counters, the config)
into its tensors, stored by safetensors, and a JSON skeleton, stored in the file's metadata, in which each
tensor is a reference by name. :func:`load` reads the tensors back and rebuilds the skeleton; all it can
produce is dicts, lists, tuples, numbers, strings and tensors. Dicts keep their key types (an optimiser's
state is keyed by int), tuples stay tuples (Adam's ``betas``), and tensors that share memory (tied
embeddings) are stored once and shared again on load.

Checkpoints written by earlier versions (``checkpoint.pt``, a pickle) are not read by :func:`load`; ``python -m
baselines.ppo.checkpoint migrate OUT_DIR`` converts one with torch's weights-only loader, which refuses
anything but tensors and plain containers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch

FILENAME = "checkpoint.safetensors"
LEGACY_FILENAME = "checkpoint.pt"
STATE_KEY = "ragen.state"
FORMAT_KEY = "ragen.format"
FORMAT = "ragen-checkpoint-1"


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from; the message is one line that says what to do."""


def _encode(value: Any, path: str, tensors: dict[str, torch.Tensor], seen: dict[tuple, str]) -> Any:
    """``value`` as JSON, its tensors moved into ``tensors`` (keyed by where they sit) and replaced by
    ``{"t": name}``. Dicts become ``{"d": [[key, value], …]}`` and tuples ``{"u": […]}``, so every JSON object in
    the skeleton is a tag and nothing is ambiguous on the way back."""
    if isinstance(value, torch.Tensor):
        key = (
            value.untyped_storage().data_ptr(),
            value.storage_offset(),
            tuple(value.shape),
            tuple(value.stride()),
            value.dtype,
        )
        if value.numel() and key in seen:
            return {"t": seen[key]}
        value = value.detach().cpu()
        if value.untyped_storage().nbytes() != value.numel() * value.element_size():
            value = value.clone()  # a view into a larger buffer: safetensors stores whole, unshared buffers
        tensors[path] = value.contiguous()
        seen[key] = path
        return {"t": path}
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"checkpoint state key {k!r} at {path or '<root>'} is not a str or int")
            items.append([k, _encode(v, f"{path}/{k}", tensors, seen)])
        return {"d": items}
    if isinstance(value, tuple):
        return {"u": [_encode(v, f"{path}/{i}", tensors, seen) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, f"{path}/{i}", tensors, seen) for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"checkpoint state at {path or '<root>'} is a {type(value).__name__}, which has no JSON form")


def _is_pair(item: Any) -> bool:
    """A ``[key, value]`` entry of an encoded dict, with a key a dict may have."""
    return (
        isinstance(item, list) and len(item) == 2 and isinstance(item[0], (str, int)) and not isinstance(item[0], bool)
    )


def _decode(value: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if not isinstance(value, dict):
        return value
    tag, body = next(iter(value.items())) if len(value) == 1 else (None, None)
    if tag == "t" and isinstance(body, str) and body in tensors:
        return tensors[body]
    if tag == "d" and isinstance(body, list) and all(_is_pair(p) for p in body):
        return {k: _decode(v, tensors) for k, v in body}
    if tag == "u" and isinstance(body, list):
        return tuple(_decode(v, tensors) for v in body)
    raise CheckpointError(f"checkpoint state holds an unknown entry {json.dumps(value)[:80]}")


def save(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically: a save interrupted midway leaves the previous file in place."""
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    skeleton = _encode(state, "", tensors, {})
    tmp = path.with_name(path.name + ".tmp")
    save_file(tensors, str(tmp), metadata={FORMAT_KEY: FORMAT, STATE_KEY: json.dumps(skeleton, allow_nan=True)})
    os.replace(tmp, path)


def load(path: Path) -> dict[str, Any]:
    """The state :func:`save` wrote to ``path`` (tensors on the CPU); raises :class:`CheckpointError` for a file
    that is not one."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata() or {}
            if metadata.get(FORMAT_KEY) != FORMAT:
                raise CheckpointError(f"{path} is not a learner checkpoint (no {FORMAT_KEY}={FORMAT} in its header)")
            tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118 - safe_open is not a Mapping
        skeleton = json.loads(metadata[STATE_KEY])
        state = _decode(skeleton, tensors)
    except (SafetensorError, OSError, KeyError, ValueError, RecursionError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(
            f"{path} is not a readable learner checkpoint ({error}); pass --fresh to start over"
        ) from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} holds no state dict")
    return state


def legacy_message(out_dir: Path) -> str:
    """The one line that tells the owner of a pickled checkpoint how to carry on."""
    return (
        f"{out_dir / LEGACY_FILENAME} is a pickled checkpoint from an earlier version, which resume no longer "
        f"loads (unpickling a file can run code); convert it with `python -m baselines.ppo.checkpoint migrate "
        f"{out_dir}` (torch's weights-only loader) and rerun, or pass --fresh to start over"
    )


def migrate(out_dir: Path) -> Path:
    """Convert ``out_dir/checkpoint.pt`` into ``out_dir/checkpoint.safetensors`` with ``torch.load(weights_only=True)``,
    which builds only tensors and plain containers; the old file is kept. Returns the new file's path."""
    source, target = out_dir / LEGACY_FILENAME, out_dir / FILENAME
    if not source.is_file():
        raise CheckpointError(f"{source}: no such checkpoint")
    try:
        state = torch.load(source, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - the weights-only unpickler refuses with many error types
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"{source} is not a plain-tensor checkpoint; not converted ({first})") from None
    if not isinstance(state, dict) or "next_iteration" not in state:
        raise CheckpointError(f"{source} is not a learner checkpoint (no next_iteration)")
    save(target, state)
    return target


def main(argv: list[str] | None = None) -> int:
    """``python -m baselines.ppo.checkpoint migrate OUT_DIR``: convert a pickled checkpoint; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m baselines.ppo.checkpoint", description=main.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="convert OUT_DIR/checkpoint.pt to checkpoint.safetensors").add_argument(
        "out_dir", type=Path
    )
    args = parser.parse_args(argv)
    try:
        target = migrate(args.out_dir)
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {target}; the run resumes from it (the old {LEGACY_FILENAME} can be deleted)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
