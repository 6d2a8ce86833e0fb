"""Read what a hidden run handed back, as the untrusted data it is.

The harness in the sandbox saves each check's results with torch.save: a zip archive whose
`data.pkl` describes the objects and whose `data/<key>` records hold the tensors' bytes. The
student's code runs in the same process, so the file may say anything: a tensor of 2**62
elements over a one-element storage (a stride of 0), a million tensors, a pickle that names
os.system. Nothing here trusts it:

1. the file is read whole (it is small: MAX_RESULT_BYTES at most) and its zip directory checked:
   stored records only, each inside the file;
2. `data.pkl` is unpickled by an unpickler that knows five names (a tensor, an ordered dict and
   storages of plain dtypes) and builds descriptions (`TensorInfo`), not tensors;
3. the descriptions are checked against the reference outputs of the same cases: at most
   MAX_OUTPUTS outputs per case, dtypes from DTYPES, dense tensors whose storage is exactly
   their size (no stride of 0), each no larger than the reference's (four times, or
   MIN_ELEMENTS);
4. only then are tensors made, from the records' bytes, which the checks above bound.
A file that fails any step is a failed check with a reason, and costs the grader nothing more.
"""
from __future__ import annotations

import io
import math
import os
import pickle
import stat
import sys
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import torch

MAX_RESULT_BYTES = 16 * 1024 * 1024
MAX_PICKLE_BYTES = 1024 * 1024
MAX_RECORDS = 10_000
MAX_OUTPUTS = 64
MAX_DIMS = 8
MIN_ELEMENTS = 4096    # what a case may return whatever the reference's size (wrong shapes)
MAX_TEXT = 4000
DTYPES = {name: getattr(torch, name) for name in (
    "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
    "bool")}
STORAGES = {f"{kind}Storage": dtype for kind, dtype in (
    ("Double", torch.float64), ("Float", torch.float32), ("Half", torch.float16),
    ("BFloat16", torch.bfloat16), ("Long", torch.int64), ("Int", torch.int32),
    ("Short", torch.int16), ("Char", torch.int8), ("Byte", torch.uint8), ("Bool", torch.bool))}


class Untrusted(ValueError):
    """A result file the grader will not read further; the message says why."""


@dataclass(frozen=True)
class StorageInfo:
    dtype: torch.dtype
    key: str
    numel: int


@dataclass(frozen=True)
class TensorInfo:
    storage: StorageInfo
    offset: int
    shape: tuple
    stride: tuple

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _rebuild_tensor(storage, offset, shape, stride, requires_grad=False, hooks=None,
                    metadata=None):
    if not isinstance(storage, StorageInfo) or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in (offset, *shape, *stride)):
        raise Untrusted("a tensor in the result is not described the way torch.save writes one")
    if len(shape) > MAX_DIMS or len(stride) != len(shape):
        raise Untrusted(f"a tensor in the result has {len(shape)} dimensions")
    return TensorInfo(storage, offset, tuple(shape), tuple(stride))


class _Describer(pickle.Unpickler):
    """Unpickles torch.save's data.pkl into descriptions; refuses every other global."""

    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if module == "torch" and name in STORAGES:
            return STORAGES[name]
        raise Untrusted(f"the result names {module}.{name}, which a result never holds")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], torch.dtype) and isinstance(pid[2], str)
                and pid[3] == "cpu" and isinstance(pid[4], int) and 0 <= pid[4]):
            raise Untrusted("a storage in the result is not described the way torch.save writes one")
        return StorageInfo(pid[1], pid[2], pid[4])


def read_bytes(path: Path, limit: int = MAX_RESULT_BYTES) -> bytes:
    """The file's content, refusing links, devices, FIFOs and anything over `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise Untrusted(f"no readable result ({err.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Untrusted("the result is not a plain file")
        if info.st_size == 0:
            raise Untrusted("the hidden run wrote no result")
        if info.st_size > limit:
            raise Untrusted(f"the result has {info.st_size} bytes, more than the {limit} the "
                            "grader reads")
        return handle.read(limit + 1)[:limit]


def _archive(data: bytes) -> tuple[zipfile.ZipFile, str]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        raise Untrusted("the result is not a file torch.save writes") from None
    if len(members) > MAX_RECORDS:
        raise Untrusted(f"the result holds {len(members)} records")
    for member in members:
        if member.compress_type != zipfile.ZIP_STORED or member.header_offset + \
                member.file_size > len(data) or member.file_size > len(data):
            raise Untrusted("the result's records are not where it says")
    pickles = [m.filename for m in members if m.filename.endswith("/data.pkl")]
    if len(pickles) != 1 or archive.getinfo(pickles[0]).file_size > MAX_PICKLE_BYTES:
        raise Untrusted("the result is not a file torch.save writes")
    return archive, pickles[0][: -len("data.pkl")]


def describe(data: bytes) -> tuple[object, zipfile.ZipFile, str]:
    """(the result's objects, tensors as TensorInfo; the archive; its record prefix)."""
    archive, prefix = _archive(data)
    order = archive.read(f"{prefix}byteorder") if f"{prefix}byteorder" in archive.namelist() else b"little"
    if order.strip() != sys.byteorder.encode():
        raise Untrusted("the result was written in another byte order")
    try:
        return _Describer(io.BytesIO(archive.read(f"{prefix}data.pkl"))).load(), archive, prefix
    except Untrusted:
        raise
    except Exception as err:  # noqa: BLE001 - a broken or hostile pickle
        raise Untrusted(f"the result could not be read ({type(err).__name__})") from None


def _reference(want) -> dict:
    """The reference's outputs of one case ("init" cases keep them one level down)."""
    if isinstance(want, dict) and "deterministic" in want:
        return want["outputs"]
    return want


def _shape_text(shape) -> str:
    return str(tuple(shape))


def _check_tensor(name: str, info, reference: torch.Tensor | None) -> None:
    if not isinstance(info, TensorInfo) or not isinstance(info.storage, StorageInfo) or \
            not isinstance(info.shape, tuple) or not isinstance(info.stride, tuple):
        raise Untrusted(f"{name} is not a tensor")
    if info.storage.dtype not in DTYPES.values():
        raise Untrusted(f"{name} has dtype {info.storage.dtype}, which the grader does not read")
    if any(not isinstance(n, int) or n < 0 for n in info.shape):
        raise Untrusted(f"{name} has the shape {_shape_text(info.shape)}")
    bound = MIN_ELEMENTS if reference is None else max(MIN_ELEMENTS, 4 * reference.numel())
    if info.numel > bound:
        expected = "" if reference is None else f", expected {_shape_text(reference.shape)}"
        raise Untrusted(f"{name} has {info.numel} elements{expected}")
    if info.offset != 0 or info.storage.numel != info.numel or not _dense(info):
        raise Untrusted(f"{name} is not a plain dense tensor (its storage holds "
                        f"{info.storage.numel} elements for a shape of {_shape_text(info.shape)})")


def _dense(info: TensorInfo) -> bool:
    """Whether every element has its own place in the storage and every place is used: the
    strides of a contiguous tensor, in some order of the axes (a gradient may be permuted)."""
    step = 1
    for stride, size in sorted((st, sz) for sz, st in zip(info.shape, info.stride) if sz > 1):
        if stride != step:
            return False
        step *= size
    return True


def _tensor(info: TensorInfo, archive: zipfile.ZipFile, prefix: str) -> torch.Tensor:
    if info.numel == 0:
        return torch.empty(info.shape, dtype=info.storage.dtype)
    record = f"{prefix}data/{info.storage.key}"
    size = info.numel * torch.empty((), dtype=info.storage.dtype).element_size()
    try:
        if archive.getinfo(record).file_size != size:
            raise Untrusted("a tensor's bytes are not the size its shape says")
        raw = bytearray(archive.read(record))
    except (KeyError, zipfile.BadZipFile, OSError, EOFError):
        raise Untrusted("a tensor's bytes are missing from the result") from None
    flat = torch.frombuffer(raw, dtype=info.storage.dtype)
    return flat.as_strided(info.shape, info.stride).contiguous()


def _case_result(got, want, archive: zipfile.ZipFile, prefix: str) -> dict:
    if not isinstance(got, dict):
        raise Untrusted("a case's result is not a record")
    if "error" in got:
        if not isinstance(got["error"], str):
            raise Untrusted("a case's error is not text")
        return {"error": got["error"][:MAX_TEXT]}
    outputs = got.get("outputs")
    if not isinstance(outputs, dict) or len(outputs) > MAX_OUTPUTS or not all(
            isinstance(k, str) and len(k) <= 200 for k in outputs):
        raise Untrusted("a case's outputs are not a small set of named tensors")
    reference = _reference(want)
    for name, info in outputs.items():
        _check_tensor("output" if name == "output" else repr(name), info, reference.get(name))
    return {"outputs": {name: _tensor(info, archive, prefix) for name, info in outputs.items()}}


def load_results(path: Path, expected: list) -> list[dict]:
    """The results of one check's hidden cases, validated against the reference outputs
    `expected` of the same cases (one per case): [{"outputs": {name: tensor}} or {"error": text}].
    Raises Untrusted with the reason when the file is not what an honest run writes."""
    described, archive, prefix = describe(read_bytes(path))
    if not isinstance(described, list) or len(described) != len(expected):
        count = len(described) if isinstance(described, list) else "no list of"
        raise Untrusted(f"the result holds {count} cases, expected {len(expected)}")
    return [_case_result(got, want, archive, prefix) for got, want in zip(described, expected)]
