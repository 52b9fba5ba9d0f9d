"""TensorBoard event files (scalar curves), read without TensorFlow.

An event file is a sequence of TFRecords:
    uint64 length | uint32 masked_crc32c(length) | length bytes of data | uint32 masked_crc32c(data)
(little-endian; masked = ((crc >> 15 | crc << 17) + 0xa282ead8) mod 2^32), and each record's data
is an `Event` protobuf (tensorflow/core/util/event.proto):
    Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; ... }
    Summary { repeated Value value = 1; }
    Value   { string tag = 1; float simple_value = 2; TensorProto tensor = 8; SummaryMetadata metadata = 9;
              (image 4, histo 5, audio 6) }
    TensorProto { DataType dtype = 1; TensorShapeProto tensor_shape = 2; bytes tensor_content = 4;
                  repeated float float_val = 5; double double_val = 6; int32 int_val = 7; int64 int64_val = 10;
                  bool bool_val = 11; }
Scalars come as simple_value (TF1, tensorboardX, torch.utils.tensorboard) or as a one-element
tensor (TF2 summaries). Each directory holding event files becomes one run; tags become metric
keys (characters outside letters, digits, _ . - / become _). A record with a bad checksum ends
that file's reading (the length can no longer be trusted) and is reported.
"""

import os
import struct
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .. import shapes
from .base import Source, mapped, unsupported

_READS = "TensorBoard event files (events.out.tfevents.*, or a log dir holding them)"


def _crc32c_table() -> List[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def _py_crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum TFRecord uses; pure Python, about 3.5 MB/s here."""
    c = 0xFFFFFFFF
    t = _TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


try:  # a C implementation when the user has one installed (google-crc32c, as TensorBoard uses, or crc32c)
    from google_crc32c import value as crc32c  # type: ignore
except ImportError:
    try:
        from crc32c import crc32c  # type: ignore
    except ImportError:
        crc32c = _py_crc32c


def masked_crc(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(data: bytes) -> Iterator[Tuple[int, Optional[bytes], str]]:
    """(offset, record or None, problem) for each TFRecord; stops at the first unreadable one."""
    pos = 0
    while pos < len(data):
        if len(data) - pos < 12:
            yield pos, None, f"truncated record header ({len(data) - pos} bytes at the end of the file)"
            return
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if masked_crc(header) != len_crc:
            yield pos, None, "length checksum mismatch (corrupt file); the rest of the file is skipped"
            return
        end = pos + 12 + length
        if end + 4 > len(data):
            yield pos, None, "truncated record (the writer was probably still running)"
            return
        body = data[pos + 12:end]
        (data_crc,) = struct.unpack("<I", data[end:end + 4])
        if masked_crc(body) != data_crc:
            yield pos, None, "data checksum mismatch (corrupt record); the rest of the file is skipped"
            return
        yield pos, body, ""
        pos = end + 4


# ------------------------------------------------------------------ a minimal protobuf reader


def _varint(buf: bytes, i: int) -> Tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def fields(buf: bytes) -> Iterator[Tuple[int, int, Any]]:
    """(field number, wire type, value): varints as int, 64/32-bit as raw bytes, length-delimited as bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if i > len(buf):
            raise ValueError("truncated field")
        yield num, wire, v


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


_DTYPES = {1: ("float", "<f", 4), 2: ("double", "<d", 8), 3: ("int32", "<i", 4), 9: ("int64", "<q", 8), 10: ("bool", "<?", 1), 19: ("half", "<e", 2)}


def _tensor_scalar(buf: bytes) -> float:
    """The value of a one-element numeric TensorProto; ValueError naming why it is not one."""
    dtype, dims, content = 0, [], b""
    vals: List[float] = []
    for num, wire, v in fields(buf):
        if num == 1:
            dtype = v
        elif num == 2:
            for n2, _, d in fields(v):
                if n2 == 2:
                    dims.extend(_signed64(x) for k, _, x in fields(d) if k == 1)
        elif num == 4:
            content = v
        elif num == 5:  # float_val, packed or not
            vals.extend(struct.unpack(f"<{len(v) // 4}f", v) if wire == 2 else struct.unpack("<f", v))
        elif num == 6:
            vals.extend(struct.unpack(f"<{len(v) // 8}d", v) if wire == 2 else struct.unpack("<d", v))
        elif num in (7, 10, 11):
            if wire == 2:
                j = 0
                while j < len(v):
                    x, j = _varint(v, j)
                    vals.append(float(_signed64(x)))
            else:
                vals.append(float(_signed64(v)))
        elif num == 13 and wire == 2:  # half_val: packed int32 holding float16 bits
            j = 0
            while j < len(v):
                x, j = _varint(v, j)
                vals.append(struct.unpack("<e", struct.pack("<H", x & 0xFFFF))[0])
    size = 1
    for d in dims:
        size *= d
    if dtype not in _DTYPES:
        raise ValueError(f"tensor of dtype {dtype} is not a number (text, image or other summary)")
    if size != 1:
        raise ValueError(f"tensor of shape {dims} is not a scalar (histogram or other non-scalar summary)")
    name, fmt, width = _DTYPES[dtype]
    if content:
        if len(content) != width:
            raise ValueError(f"{name} tensor_content of {len(content)} bytes is not one value")
        return float(struct.unpack(fmt, content)[0])
    if len(vals) != 1:
        raise ValueError(f"{name} tensor with {len(vals)} values is not a scalar")
    return vals[0]


# Summary.Value's oneof (tensorboard/compat/proto/summary.proto): simple_value = 2,
# obsolete_old_style_histogram = 3, image = 4, histo = 5, audio = 6, tensor = 8; metadata = 9.
_KINDS = {3: "histogram", 4: "image", 5: "histogram", 6: "audio"}
_PLUGINS = {"histograms": "histogram", "text": "text", "images": "image", "audio": "audio", "pr_curves": "PR curve",
            "hparams": "hparams", "mesh": "mesh", "custom_scalars": "custom scalars layout"}


def _plugin_name(meta: bytes) -> str:
    """SummaryMetadata { PluginData plugin_data = 1 { string plugin_name = 1; bytes content = 2; } ... }"""
    try:
        for n, w, v in fields(meta):
            if n == 1 and w == 2:
                for n2, w2, x in fields(v):
                    if n2 == 1 and w2 == 2:
                        return x.decode("utf-8", "replace")
    except ValueError:
        pass
    return ""


def parse_event(buf: bytes) -> Tuple[Optional[float], int, List[Tuple[str, Any]]]:
    """(wall_time, step, [(tag, value float or an Exception saying why it is not a scalar)])."""
    wall, step, values = None, 0, []
    for num, wire, v in fields(buf):
        if num == 1 and wire == 1:
            wall = struct.unpack("<d", v)[0]
        elif num == 2 and wire == 0:
            step = _signed64(v)
        elif num == 5 and wire == 2:
            for n2, _, val in fields(v):
                if n2 != 1:
                    continue
                tag, value, kinds, plugin = "", None, [], ""
                for n3, w3, x in fields(val):
                    if n3 == 1:
                        tag = x.decode("utf-8", "replace")
                    elif n3 == 2 and w3 == 5:
                        value = struct.unpack("<f", x)[0]
                    elif n3 == 8:
                        try:
                            value = _tensor_scalar(x)
                        except ValueError as e:
                            value = e
                    elif n3 == 9 and w3 == 2:
                        plugin = _plugin_name(x)
                    elif n3 in _KINDS:
                        kinds.append(_KINDS[n3])
                if value is None:
                    value = ValueError(f"{kinds[0] if kinds else 'empty'} summary is not a scalar (TurnLens imports scalar curves)")
                elif isinstance(value, ValueError) and plugin and plugin != "scalars":
                    # a TF2-style summary: the plugin says what the tensor is (text, histograms, images, pr_curves...)
                    value = ValueError(f"{_PLUGINS.get(plugin, plugin)} summary is not a scalar (TurnLens imports scalar curves; {value})")
                values.append((tag, value))
    return wall, step, values


def _event_files(root: Path) -> Dict[Path, List[Path]]:
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and "tfevents" in p.name)
    by_dir: Dict[Path, List[Path]] = {}
    for f in files:
        by_dir.setdefault(f.parent, []).append(f)
    return by_dir


def read(path: str, env_id: str = "external") -> List[Source]:
    """TensorBoard event files (events.out.tfevents.*): scalar curves, one run per directory"""
    # absolute: `turnlens import tensorboard .` names its run after the folder, not "" (Path(".").name)
    root = Path(os.path.abspath(path))
    groups = _event_files(root)
    if not groups:
        raise unsupported(path, "tensorboard", _READS)
    out = []
    for d, files in groups.items():
        rel = d.relative_to(root) if root.is_dir() and d != root else None
        name = f"{root.name}/{rel}" if rel else d.name
        src = Source(name=name, config={"source": "tensorboard", "logdir": str(d)}, key=os.path.abspath(d), env_id=env_id)
        points = []
        for f in files:
            data = mapped(f)
            for n, (offset, rec, problem) in enumerate(records(data)):
                where = f"{f.name}@{offset}"
                if rec is None:
                    if n == 0 and root.is_file():  # not one readable record: not an event file at all
                        raise unsupported(path, "tensorboard", _READS)
                    src.reject(where, problem)
                    break
                try:
                    wall, step, values = parse_event(rec)
                except ValueError as e:
                    src.reject(where, f"not an Event protobuf: {e}")
                    continue
                for tag, value in values:
                    if isinstance(value, Exception):
                        src.reject(f"{where} {tag}", str(value))
                        continue
                    try:
                        points.append(shapes.metric_point({shapes.sanitize_key(tag): value}, step, wall if wall and wall > 0 else None))
                    except shapes.ShapeError as e:
                        src.reject(f"{where} {tag}", str(e))
        src.add_metrics(points, f"{name} scalars")
        out.append(src)
    return out
