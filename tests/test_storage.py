import pytest
from graphfreeze import storage
from graphfreeze.errors import InputError, OutputError


def test_atomic_batch_write_and_force(tmp_path):
    a, b = str(tmp_path / "sub" / "a.pb"), str(tmp_path / "sub" / "a.pb.json")
    storage.write_files({a: b"1", b: b"2"}, force=False)
    assert open(a, "rb").read() == b"1" and open(b, "rb").read() == b"2"
    with pytest.raises(OutputError, match="a.pb: already exists; pass --force"):
        storage.write_files({a: b"3"}, force=False)
    storage.write_files({a: b"3"}, force=True)
    assert open(a, "rb").read() == b"3"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["a.pb", "a.pb.json"]


def test_ram_filesystem_round_trip():
    path = "ram://graphfreeze-test/out/model.pb"
    storage.write_files({path: b"frozen"}, force=True)
    assert storage.exists(path) and storage.read_bytes(path) == b"frozen"


def test_missing_file_names_it(tmp_path):
    with pytest.raises(InputError, match="nope.meta: file not found"):
        storage.read_bytes(str(tmp_path / "nope.meta"))
