"""TensorBoard events read back as TensorBoard shows them, written here without our logger's code.

An events file is a sequence of TFRecords (a little-endian uint64 length, a uint32 masked CRC of
it, the serialised ``Event`` proto, a uint32 masked CRC of that); tensorboardX's own protos parse
the events. :func:`tensorboard_view` then applies TensorBoard's rule for a restarted run (its
``EventAccumulator`` with ``purge_orphaned_data``, for files of version ``brain.Event:2``): the
files of a directory are read in the order of their names, and an event with
``session_log.status == START`` at step S drops every point of every tag at a step >= S read so far.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

from tensorboardX.proto.event_pb2 import Event, SessionLog


def read_events(path: Path) -> list[Event]:
    """The events of one file, in order; a record torn by a kill in mid-write ends the file, as
    it does for TensorBoard."""
    data, events, offset = path.read_bytes(), [], 0
    while offset + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        start = offset + 8 + 4  # after the length and its CRC
        if start + length + 4 > len(data):
            break
        events.append(Event.FromString(data[start : start + length]))
        offset = start + length + 4  # after the event and its CRC
    return events


def event_files(directory: Path) -> list[Path]:
    """The events files of one TensorBoard run directory, in the order TensorBoard reads them."""
    return sorted(p for p in directory.iterdir() if p.is_file() and ".tfevents." in p.name)


def tensorboard_view(directory: Path) -> dict[str, list[tuple[int, float]]]:
    """Tag -> its ``(step, value)`` points, as TensorBoard shows the run in ``directory``."""
    points: dict[str, list[tuple[int, float]]] = {}
    for path in event_files(directory):
        for event in read_events(path):
            if event.HasField("session_log") and event.session_log.status == SessionLog.START:
                for tag in points:
                    points[tag] = [(s, v) for s, v in points[tag] if s < event.step]
            elif event.HasField("summary"):
                for value in event.summary.value:
                    points.setdefault(value.tag, []).append((event.step, value.simple_value))
    return points


def steps_by_tag(directory: Path) -> dict[str, list[int]]:
    """Tag -> the steps TensorBoard shows for it, in the order it shows them."""
    return {tag: [s for s, _ in values] for tag, values in tensorboard_view(directory).items()}


def steps_in_metrics(records: list[dict]) -> dict[str, list[int]]:
    """Tag -> the env steps of the ``metrics.jsonl`` records that hold a finite number for it (what
    the logger mirrors to TensorBoard: every field but the record's step, env steps, time and
    seed)."""
    steps: dict[str, list[int]] = {}
    for record in records:
        for name, value in record.items():
            if name in ("step", "env_steps", "wall_s", "seed"):
                continue
            if type(value) in (int, float) and math.isfinite(value):
                steps.setdefault(name, []).append(record["env_steps"])
    return steps
