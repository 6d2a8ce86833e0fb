"""course/confirm/flat.py gives back what torch.load gives: the same types, dtypes, shapes,
strides, storage offsets, requires_grad, bytes and storage sharing; and refuses what it cannot."""
from __future__ import annotations

import gzip
import io
from collections import OrderedDict

import pytest
import torch

from course.checks.expected import REFERENCE_DIR
from course.confirm import flat


def _bytes(storage) -> bytes:
    return torch.empty(0, dtype=torch.uint8).set_(storage).numpy().tobytes()


def assert_same(a, b, path="value", shared=None):
    """`b` is what torch.load would have given for `a`, down to which tensors share storage."""
    shared = {} if shared is None else shared
    assert type(a) is type(b), path
    if isinstance(a, torch.Tensor):
        assert (a.dtype, a.shape, a.stride(), a.storage_offset(), a.requires_grad, a.device) == \
            (b.dtype, b.shape, b.stride(), b.storage_offset(), b.requires_grad, b.device), path
        if a.device.type == "meta":  # no data to compare
            return
        sa, sb = a.untyped_storage(), b.untyped_storage()
        assert _bytes(sa) == _bytes(sb) and sa.resizable() == sb.resizable(), path
        if sa.nbytes():
            assert shared.setdefault(("a", sa.data_ptr()), sb.data_ptr()) == sb.data_ptr(), path
            assert shared.setdefault(("b", sb.data_ptr()), sa.data_ptr()) == sa.data_ptr(), path
    elif isinstance(a, dict):
        assert list(a) == list(b) and [type(k) for k in a] == [type(k) for k in b], path
        for key in a:
            assert_same(a[key], b[key], f"{path}[{key!r}]", shared)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]", shared)
    elif isinstance(a, float) and a != a:
        assert b != b, path
    else:
        assert a == b and repr(a) == repr(b), path


def torch_round_trip(value):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)


def test_every_kind_of_value_comes_back_as_torch_load_gives_it():
    x = torch.randn(4, 6, dtype=torch.float64)
    value = {"x": x, "view": x.t(), "slice": x[1:, 2:], 3: (1, 2.0, None, True, "s"),
             "parameter": torch.nn.Parameter(torch.ones(2)),
             "state": OrderedDict(w=torch.zeros(0), v=torch.arange(5)), "dtype": torch.float32,
             "size": torch.Size([2, 3]), "nan": float("nan"), "inf": -float("inf"), "zero": -0.0,
             "bf16": torch.randn(3).bfloat16(), "bool": torch.tensor([True, False]),
             "grad": torch.randn(2, requires_grad=True), (1, "x"): [[], {}], "big": 2**70,
             "empty": torch.empty(0, 3), "scalar": torch.tensor(1.5)}
    assert_same(torch_round_trip(value), flat.loads(flat.dumps(value)))


def test_a_loaded_tensor_owns_its_bytes():
    x = torch.arange(4.0)
    data = flat.dumps([x, x[1:]])
    first, second = flat.loads(data), flat.loads(data)
    first[0][1] = 99.0
    assert first[1][0] == 99.0 and second[0][1] == 1.0 and x[1] == 1.0


@pytest.mark.parametrize("value", [torch.randn(2, requires_grad=True) * 2, {1.5j: 1},
                                   object(), torch.randn(2).to_sparse(), type("S", (str,), {})("s")])
def test_what_it_cannot_hold_it_refuses_and_save_falls_back_to_torch_save(value, tmp_path):
    with pytest.raises(flat.Unsupported):
        flat.dumps(value)
    if isinstance(value, torch.Tensor) and not value.is_sparse:
        assert not flat.save(value, tmp_path / "v.pt")
        assert torch.equal(flat.load(tmp_path / "v.pt"), value.detach())


@pytest.mark.parametrize("path", sorted(REFERENCE_DIR.glob("*.pt")) +
                         sorted(REFERENCE_DIR.glob("*.calls.pt.gz")), ids=lambda p: p.name)
def test_every_recorded_reference_loads_the_same_from_its_sidecar(path, tmp_path, monkeypatch):
    source, sidecars = tmp_path / "reference_data", tmp_path / "sidecars"
    source.mkdir()
    copy = source / path.name
    copy.write_bytes(path.read_bytes())
    assert flat.write_sidecars(source, sidecars) == 1
    data = path.read_bytes()
    want = torch.load(io.BytesIO(gzip.decompress(data) if path.suffix == ".gz" else data),
                      weights_only=True)
    monkeypatch.setenv(flat.FOLDER_VARIABLE, str(sidecars))
    assert_same(want, flat.load_recorded(copy))
    monkeypatch.delenv(flat.FOLDER_VARIABLE)
    assert_same(want, flat.load_recorded(copy))


def test_a_sidecar_is_used_only_for_the_bytes_it_was_made_from(tmp_path, monkeypatch):
    source, sidecars = tmp_path / "reference_data", tmp_path / "sidecars"
    source.mkdir()
    torch.save({"case": {"output": torch.zeros(2)}}, source / "x.pt")
    flat.write_sidecars(source, sidecars)
    monkeypatch.setenv(flat.FOLDER_VARIABLE, str(sidecars))
    assert flat.load_recorded(source / "x.pt")["case"]["output"].tolist() == [0.0, 0.0]
    torch.save({"case": {"output": torch.ones(2)}}, source / "x.pt")  # re-recorded since
    assert flat.load_recorded(source / "x.pt")["case"]["output"].tolist() == [1.0, 1.0]
