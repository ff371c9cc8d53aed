import os
import threading

import pytest
from graphfreeze.errors import InputError, OutputError
from graphfreeze.io import storage


def write(files: dict[str, bytes], force: bool) -> None:
    storage.check_writable(list(files), force)
    with storage.Transaction(force) as txn:
        for path, data in files.items():
            txn.put(path, data)
        txn.commit()


def test_atomic_batch_write_and_force(tmp_path):
    a, b = str(tmp_path / "sub" / "a.pb"), str(tmp_path / "sub" / "a.pb.json")
    write({a: b"1", b: b"2"}, force=False)
    assert open(a, "rb").read() == b"1" and open(b, "rb").read() == b"2"
    with pytest.raises(OutputError, match="a.pb: already exists; pass --force"):
        write({a: b"3"}, force=False)
    write({a: b"3"}, force=True)
    assert open(a, "rb").read() == b"3"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["a.pb", "a.pb.json"]


def test_failed_batch_leaves_nothing(tmp_path):
    out = str(tmp_path / "a.pb")
    with pytest.raises(RuntimeError), storage.Transaction(force=False) as txn:
        txn.put(out, b"1")
        (tmp,) = txn.workdir([str(tmp_path / "a.savedmodel")])
        os.makedirs(os.path.join(tmp, "variables"))
        assert len(os.listdir(tmp_path)) == 2
        raise RuntimeError("a stage failed")
    assert os.listdir(tmp_path) == []


def test_ram_filesystem_round_trip():
    path = "ram://graphfreeze-test/out/model.pb"
    write({path: b"frozen"}, force=True)
    assert storage.exists(path) and storage.read_bytes(path) == b"frozen"


def test_missing_file_names_it(tmp_path):
    with pytest.raises(InputError, match="nope.meta: file not found"):
        storage.read_bytes(str(tmp_path / "nope.meta"))


def test_directories_replaced_concurrently_stay_whole(tmp_path):
    """Several runs replacing one directory output at once (--force): always one whole tree."""
    out, errors = str(tmp_path / "m.savedmodel"), []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                with storage.Transaction(force=True) as txn:
                    (tmp,) = txn.workdir([out])
                    os.makedirs(os.path.join(tmp, "variables"))
                    for name in ("saved_model.pb", "variables/variables.index"):
                        with open(os.path.join(tmp, name), "w") as f:
                            f.write(f"{n}-{i}")
                    txn.commit()
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert os.listdir(tmp_path) == ["m.savedmodel"]
    texts = {open(os.path.join(out, n)).read() for n in ("saved_model.pb", "variables/variables.index")}
    assert len(texts) == 1


def test_write_errors_are_one_line_naming_the_output():
    err = storage.write_error("out/m.pb", OSError(28, "No space left on device"))
    assert str(err) == "out/m.pb: no space left on device; free some space or choose another -o"
    err = storage.write_error("gs://b/m.pb", RuntimeError("upload failed: Read-only file system"))
    assert str(err) == "gs://b/m.pb: read-only file system; choose another -o"
