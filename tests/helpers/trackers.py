"""Reading back what a run logged to TensorBoard and to an offline W&B run (for the logging tests)."""

import json
import time
from pathlib import Path


def wandb_history(out_dir: Path, rows: int) -> list[dict]:
    """``rows`` logged rows of the offline W&B runs under ``out_dir``: W&B's service process writes the run file
    on its own after ``finish()`` returns, so this waits for them (bounded)."""
    deadline = time.monotonic() + 60
    while True:
        history = read_wandb_history(out_dir)
        if len(history) >= rows or time.monotonic() > deadline:
            return history
        time.sleep(0.2)


def read_wandb_history(out_dir: Path) -> list[dict]:
    """The rows logged to the offline W&B runs under ``out_dir``, read back from their ``.wandb`` files.

    The file is W&B's record log: a 7-byte header, then LevelDB-style records in 32 KiB blocks (4-byte CRC,
    2-byte length, 1-byte type: full, first, middle, last) holding protobuf ``Record`` messages."""
    from wandb.proto import wandb_internal_pb2

    files = sorted(out_dir.glob("**/offline-run-*/*.wandb"))
    assert files, f"no offline W&B run under {out_dir}"
    rows = []
    for path in files:
        data, pos, partial = path.read_bytes(), 7, b""
        while pos + 7 <= len(data):
            if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
                pos += 32768 - pos % 32768
                continue
            length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
            chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
            if kind in (2, 3):
                partial += chunk
                continue
            if kind not in (1, 4):
                break
            record = wandb_internal_pb2.Record()
            record.ParseFromString(partial + chunk)
            partial = b""
            if record.WhichOneof("record_type") == "history":
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})  # fmt: skip
    return rows


def tensorboard_tags(out_dir: Path) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = set()
    for events in out_dir.glob("**/events.out.tfevents.*"):
        accumulator = EventAccumulator(str(events))
        accumulator.Reload()
        tags |= set(accumulator.Tags()["scalars"])
    return tags
