"""rosbag2 bags (MCAP storage) written and read with ``rosbags``, no ROS.

Writing: :class:`BagRecorder` wraps ``rosbags.rosbag2.Writer`` (metadata version 9, MCAP
storage). The bytes handed to :meth:`BagRecorder.write` are stored as given (CDR from a raw
subscription): nothing is deserialised or re-serialised. Each topic's message definition
and RIHS01 type hash (``type_description_hash`` in ``metadata.yaml``, what Jazzy and later
expect) come from the ``rosbags`` Kilted type store, or from the ``.msg`` file installed
under an ament prefix for types the store lacks.

Crash safety: ``rosbags`` buffers messages in a chunk in memory and writes it out once it
holds more than 1 MiB, and writes the MCAP summary and footer only on close. So
:meth:`BagRecorder.flush` (called every ``flush_period``) closes the pending chunk, ends the
file there with a data-end record and a footer without a summary (valid MCAP: readers scan
the chunks), flushes it to the operating system, rewrites ``metadata.yaml`` with the counts
so far, and moves the writer back before that ending, which the next chunk or the real
summary overwrites. A recorder killed with SIGKILL (or a machine that loses power after the
page cache reached the disk) leaves a bag that every MCAP and rosbag2 reader opens as it is,
holding every message up to its last flush (a full 1 MiB chunk that ``rosbags`` writes
between two flushes is a flush of its own). Only a kill during the few microseconds
of such a write leaves a file without its end: :func:`recover` (``snake bag repair``, and
every reader of this package before it reads) cuts the partial tail, appends a footer and
fixes ``metadata.yaml``; it loses nothing that was flushed.

Reading: :func:`open_reader` opens any rosbag2 folder ``rosbags`` reads (MCAP or sqlite3
storage, metadata versions 1 to 9, e.g. from ``ros2 bag record``), or a single ``.mcap`` or
``.db3`` file, recovering an interrupted MCAP bag first. ``snake replay``, ``snake compare``
and the replay node all read through it.
"""

from __future__ import annotations

import importlib
import os
import re
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from rosbags.interfaces import Connection, Qos
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.rosbag2.errors import ReaderError, WriterError
from rosbags.rosbag2.metadata import dump_qos_v9
from rosbags.typesys import Stores, TypesysError, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from .errors import VizError

#: The topics recorded by default, with their types where the design fixes them; the
#: others are typed from the ROS graph when they appear.
DEFAULT_TOPICS: Mapping[str, str | None] = {
    "/joint_commands": "sensor_msgs/msg/JointState",
    "/joint_desired": "sensor_msgs/msg/JointState",
    "/sim/joint_states": "sensor_msgs/msg/JointState",
    "/measured/joint_states": "sensor_msgs/msg/JointState",
    "/sim/odom": "nav_msgs/msg/Odometry",
    "/sim/link_deflections": "sensor_msgs/msg/JointState",
    "/measured/pose": "geometry_msgs/msg/PoseStamped",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "/compare/error": None,
    "/compare/markers": None,
}
#: Time between two flushes of a recording to disk [s] (what a kill can lose at most).
FLUSH_PERIOD_S = 1.0
#: rosbag2 metadata version written (Jazzy and Kilted read it; it carries the type hashes).
METADATA_VERSION: Literal[9] = 9

T = TypeVar("T")

_MAGIC = b"\x89MCAP0\r\n"
_OP_HEADER, _OP_FOOTER, _OP_DATA_END = 0x01, 0x02, 0x0F
_FOOTER = struct.pack("<BQQQI", _OP_FOOTER, 20, 0, 0, 0) + _MAGIC
_DATA_END = struct.pack("<BQI", _OP_DATA_END, 4, 0)


class BagError(VizError):
    """A bag that cannot be written or read, with the path and the fix."""


@cache
def typestore() -> Typestore:
    """The ``rosbags`` type store of ROS 2 Kilted (the runtime this package pins)."""
    return get_typestore(Stores.ROS2_KILTED)


def _load_msg_file(store: Typestore, msgtype: str) -> None:
    """Register ``pkg/msg/Name`` from ``<prefix>/share/pkg/msg/Name.msg`` (ament prefixes)."""
    package, _, name = msgtype.partition("/msg/")
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    for prefix in prefixes:
        path = Path(prefix) / "share" / package / "msg" / f"{name}.msg"
        if path.is_file():
            store.register(get_types_from_msg(path.read_text(), msgtype))
            return
    raise BagError(
        f"message type {msgtype} is neither in the rosbags Kilted type store nor installed "
        f"as share/{package}/msg/{name}.msg under AMENT_PREFIX_PATH"
    )


def message_definition(msgtype: str) -> tuple[str, str]:
    """The concatenated ``.msg`` definition and the RIHS01 hash of ``msgtype``.

    Raises:
        BagError: the type (or a type it uses) is unknown.
    """
    store = typestore()
    for _ in range(32):  # each pass may reveal one more missing nested type
        try:
            msgdef, _ = store.generate_msgdef(msgtype, ros_version=2)
            return msgdef, store.hash_rihs01(msgtype)
        except TypesysError as exc:  # "Type 'pkg/msg/Name' is unknown."
            missing = re.search(r"'([\w/]+/msg/\w+)'", str(exc))
            _load_msg_file(store, missing.group(1) if missing else msgtype)
    raise BagError(f"cannot resolve the definition of {msgtype}")


def message_class(msgtype: str) -> Any:
    """The Python class of a ROS message type name such as ``sensor_msgs/msg/JointState``.

    Raises:
        BagError: no installed Python package provides it.
    """
    package, _, name = msgtype.rpartition("/")
    try:
        return getattr(importlib.import_module(package.replace("/", ".")), name)
    except (ImportError, AttributeError, ValueError):
        raise BagError(
            f"message type {msgtype!r} is not installed for Python "
            f"(no {package.replace('/', '.')}.{name}); install its package"
        ) from None


class BagRecorder:
    """A rosbag2 MCAP bag being written: topics added as they appear, raw CDR messages.

    Args:
        path: the bag folder to create (must not exist).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f"{self.path} exists already; choose a new bag folder (-o)")
        self._writer = Writer(
            self.path, version=METADATA_VERSION, storage_plugin=StoragePlugin.MCAP
        )
        self._connections: dict[str, Connection] = {}

    def open(self) -> None:
        """Create the bag folder and the MCAP file, and a first ``metadata.yaml``."""
        try:
            self._writer.open()
        except WriterError as exc:
            raise BagError(str(exc)) from None
        self._write_metadata()

    @property
    def topics(self) -> dict[str, str]:
        """Topic -> message type of every topic added so far."""
        return {t: c.msgtype for t, c in self._connections.items()}

    @property
    def counts(self) -> dict[str, int]:
        """Topic -> messages written so far."""
        return {t: self._writer.counts[c.id] for t, c in self._connections.items()}

    def add_topic(self, topic: str, msgtype: str, offered_qos: Sequence[Qos] = ()) -> None:
        """Add a topic with its publishers' QoS profiles (``offered_qos_profiles``).

        Raises:
            BagError: unknown message type, or the topic was added already.
        """
        if topic in self._connections:
            raise BagError(f"topic {topic} is in the bag already")
        msgdef, rihs01 = message_definition(msgtype)
        self._connections[topic] = self._writer.add_connection(
            topic,
            msgtype,
            msgdef=msgdef,
            rihs01=rihs01,
            serialization_format="cdr",
            offered_qos_profiles=list(offered_qos),
        )

    def write(self, topic: str, stamp_ns: int, data: bytes) -> None:
        """Store one serialised (CDR) message of an added topic, received at ``stamp_ns``
        [ns since the epoch, or sim time]."""
        storage: Any = self._writer.storage
        before = storage.bio.tell()
        self._writer.write(self._connections[topic], stamp_ns, data)
        if storage.bio.tell() != before:  # rosbags wrote a full chunk: end the file there
            self.flush()

    def flush(self) -> None:
        """Write the messages buffered so far to disk as a complete MCAP chunk, end the file
        after it (data end, footer), and write ``metadata.yaml`` to match: a kill after this
        leaves a bag any reader opens as it is (see the module docstring)."""
        storage: Any = self._writer.storage
        if storage is None:
            return
        if storage.chunk.msgs:  # rosbags' McapWriter: messages in the pending chunk
            storage.close_chunk()
        end = storage.bio.tell()
        storage.bio.write(_DATA_END + _FOOTER)
        storage.bio.flush()
        storage.bio.seek(end)  # the next chunk, or the summary on close, overwrites the end
        self._write_metadata()

    def close(self) -> None:
        """Finish the bag: last chunk, MCAP summary and footer, final ``metadata.yaml``."""
        if self._writer.storage is not None:
            self._writer.close()

    def _write_metadata(self) -> None:
        w = self._writer
        count = sum(w.counts.values())
        start = w.min_timestamp if count else 0
        duration = max(0, w.max_timestamp - w.min_timestamp) if count else 0
        name = f"{self.path.name}.mcap"
        info = {
            "version": METADATA_VERSION,
            "storage_identifier": "mcap",
            "relative_file_paths": [name],
            "duration": {"nanoseconds": duration},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": count,
            "topics_with_message_count": [
                {
                    "topic_metadata": _topic_metadata(c, c.digest),
                    "message_count": w.counts[c.id],
                }
                for c in self._connections.values()
            ],
            "compression_format": "",
            "compression_mode": "",
            "files": [
                {
                    "path": name,
                    "starting_time": {"nanoseconds_since_epoch": start},
                    "duration": {"nanoseconds": duration},
                    "message_count": count,
                }
            ],
            "custom_data": None,
            "ros_distro": "rosbags",
        }
        _dump_yaml(self.path / "metadata.yaml", {"rosbag2_bagfile_information": info})


def _dump_yaml(path: Path, data: Any) -> None:
    """Write YAML atomically (a kill leaves the old file or the new one, never half)."""
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(yaml.safe_dump(data, default_flow_style=False, sort_keys=False))
    tmp.replace(path)


@dataclass(frozen=True)
class Recovery:
    """What :func:`recover` did to one MCAP file."""

    path: Path
    kept_bytes: int
    dropped_bytes: int
    message_count: int


def _complete_records_end(data: bytes) -> int:
    """Offset after the last complete top-level MCAP record (header included)."""
    offset = len(_MAGIC)
    end = offset
    while offset + 9 <= len(data):
        (length,) = struct.unpack_from("<Q", data, offset + 1)
        if offset + 9 + length > len(data):
            break
        offset += 9 + length
        end = offset
    return end


def is_interrupted(mcap_file: Path) -> bool:
    """True if ``mcap_file`` does not end with an MCAP footer (its writer was killed)."""
    with mcap_file.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size < len(_MAGIC) * 2:
            return True
        f.seek(size - len(_MAGIC))
        return f.read() != _MAGIC


def _recover_file(path: Path) -> Recovery | None:
    """Cut an interrupted MCAP file after its last complete record and close it with a
    data-end record and a footer (None: it was complete). The message count is left 0.

    Raises:
        BagError: the file does not even start with an MCAP header.
    """
    if not is_interrupted(path):
        return None
    data = path.read_bytes()
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 9 or data[8] != _OP_HEADER:
        raise BagError(f"{path} has no MCAP header; nothing can be recovered from it")
    end = _complete_records_end(data)
    with path.open("r+b") as f:
        f.truncate(end)
        f.seek(end)
        f.write(_DATA_END + _FOOTER)
    return Recovery(path, end, len(data) - end, 0)


def recover(bag: Path) -> list[Recovery]:
    """Make an interrupted MCAP bag readable in place: drop the partial record at the end of
    each unfinished ``.mcap`` file, append a data-end record and a footer (no summary:
    readers scan the chunks), and rewrite ``metadata.yaml`` with the counts found.

    Args:
        bag: the bag folder.

    Returns:
        One entry per file that needed it (empty if the bag was complete).

    Raises:
        BagError: not a bag folder, or an MCAP file without even a header.
    """
    bag = Path(bag)
    files = sorted(bag.glob("*.mcap")) if bag.is_dir() else []
    if not files:
        raise BagError(f"{bag} is not a rosbag2 MCAP bag folder (no .mcap file in it)")
    done = [r for r in map(_recover_file, files) if r is not None]
    if done:
        counts = _rewrite_metadata(bag, files)
        done = [
            Recovery(r.path, r.kept_bytes, r.dropped_bytes, counts.get(r.path.name, 0))
            for r in done
        ]
    return done


def _rewrite_metadata(bag: Path, files: Sequence[Path]) -> dict[str, int]:
    """Recount ``metadata.yaml`` from the MCAP files themselves; returns file -> count."""
    from rosbags.rosbag2.storage_mcap import McapReader

    meta_path = bag / "metadata.yaml"
    old: dict[str, Any] = {}
    if meta_path.is_file():
        old = (yaml.safe_load(meta_path.read_text()) or {}).get("rosbag2_bagfile_information", {})
    hashes = {
        t["topic_metadata"]["name"]: t["topic_metadata"].get("type_description_hash", "")
        for t in old.get("topics_with_message_count", [])
    }
    topics: dict[str, dict[str, Any]] = {}
    file_entries = []
    per_file: dict[str, int] = {}
    start, end = 2**63 - 1, 0
    for path in files:
        reader = McapReader(path)
        reader.open()
        try:
            meta = reader.metadata
            per_file[path.name] = meta.message_count
            if meta.message_count:
                start, end = min(start, meta.start_time), max(end, meta.end_time - 1)
            file_entries.append(
                {
                    "path": path.name,
                    "starting_time": {"nanoseconds_since_epoch": meta.start_time},
                    "duration": {"nanoseconds": meta.duration},
                    "message_count": meta.message_count,
                }
            )
            for c in reader.connections:
                entry = topics.setdefault(
                    c.topic,
                    {
                        "topic_metadata": _topic_metadata(
                            c, hashes.get(c.topic) or _rihs01_or_empty(c.msgtype)
                        ),
                        "message_count": 0,
                    },
                )
                entry["message_count"] += c.msgcount
        finally:
            reader.close()
    count = sum(per_file.values())
    info = {
        **old,
        "version": METADATA_VERSION,
        "storage_identifier": "mcap",
        "relative_file_paths": [p.name for p in files],
        "duration": {"nanoseconds": max(0, end - start) if count else 0},
        "starting_time": {"nanoseconds_since_epoch": start if count else 0},
        "message_count": count,
        "topics_with_message_count": list(topics.values()),
        "compression_format": "",
        "compression_mode": "",
        "files": file_entries,
    }
    _dump_yaml(meta_path, {"rosbag2_bagfile_information": info})
    return per_file


def _topic_metadata(connection: Connection, type_hash: str) -> dict[str, Any]:
    """A topic's ``topic_metadata`` entry of rosbag2's ``metadata.yaml`` (version 9)."""
    return {
        "name": connection.topic,
        "type": connection.msgtype,
        "serialization_format": "cdr",
        "offered_qos_profiles": dump_qos_v9(
            list(getattr(connection.ext, "offered_qos_profiles", []))
        ),
        "type_description_hash": type_hash,
    }


def _rihs01_or_empty(msgtype: str) -> str:
    try:
        return message_definition(msgtype)[1]
    except BagError:
        return ""


@contextmanager
def open_reader(bag: Path) -> Iterator[Reader]:
    """Open a rosbag2 bag for reading: a bag folder (MCAP or sqlite3 storage, from this
    package's recorder or ``ros2 bag record``) or a single ``.mcap`` or ``.db3`` file.
    An interrupted MCAP bag is recovered first (:func:`recover`; a lone ``.mcap`` file
    outside a bag folder is only cut and closed).

    Raises:
        BagError: not a readable bag.
    """
    bag = Path(bag)
    if bag.is_file():
        if bag.suffix not in (".mcap", ".db3"):
            raise BagError(f"{bag} is neither a bag folder nor an .mcap or .db3 file")
        if bag.suffix == ".mcap" and is_interrupted(bag):
            if (bag.parent / "metadata.yaml").is_file():
                recover(bag.parent)
            else:
                _recover_file(bag)
    elif bag.is_dir():
        if any(is_interrupted(p) for p in bag.glob("*.mcap")):
            recover(bag)
        if not (bag / "metadata.yaml").is_file():
            raise BagError(f"{bag} has no metadata.yaml; not a rosbag2 bag (ros2 bag reindex it)")
    else:
        raise BagError(f"{bag}: no such bag (give a bag folder, or an .mcap or .db3 file)")
    reader = Reader(bag)
    try:
        reader.open()
    except ReaderError as exc:
        raise BagError(f"{bag}: {exc}") from None
    try:
        yield reader
    finally:
        reader.close()


def playback_schedule(
    messages: Iterable[tuple[int, T]], start_ns: int, rate: float, clock_rate: float
) -> Iterator[tuple[float, int, T | None]]:
    """When a player publishes each message of a bag, and /clock between them.

    A message stamped ``stamp`` [ns] is due ``(stamp - start_ns) / rate`` after the start of
    play; /clock ticks are due every ``1 / clock_rate`` of play, each carrying the bag's time
    at that instant, ``start_ns + k * rate / clock_rate`` s (none with ``clock_rate`` 0).
    Ticks due before a message come before it; a late player still publishes them all, in
    order, so /clock never runs backwards.

    Args:
        messages: (bag stamp [ns], item) in the bag's order.
        start_ns: the bag's start [ns].
        rate: playback speed factor (> 0).
        clock_rate: /clock ticks per second of play [Hz] (>= 0).

    Yields:
        (due [s after the start of play], /clock value [ns], the item or None for a tick).
    """
    k = 0
    for stamp, item in messages:
        due = (stamp - start_ns) * 1e-9 / rate
        while clock_rate > 0 and k / clock_rate < due:
            yield k / clock_rate, start_ns + round(k * rate / clock_rate * 1e9), None
            k += 1
        yield due, stamp, item
