"""Temporaries are marked as a live process's own; sweeping removes only those of dead runs."""

import os
import subprocess
import time

from graphfreeze.io import temporaries


def test_temporaries_are_marked_and_owned():
    name = temporaries.temp_name("/x/model.pb")
    assert name.startswith(f".model.pb.graphfreeze.{temporaries._HOST}.{os.getpid()}.") and \
        name.endswith(".tmp")
    assert not temporaries._stale(name, "model.pb", age=0)  # this live process's


def test_sweep_removes_only_temporaries_of_dead_runs(tmp_path):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.05)
        me, host = os.getpid(), temporaries._HOST
        alive = temporaries._start_ticks(sleeper.pid)
        names = {
            f".m.pb.graphfreeze.{host}.999999999.5.00000001.tmp": False,  # pid gone
            f".m.pb.graphfreeze.{host}.{me}.1.00000002.tmp": False,  # pid reused by another process
            f".m.pb.graphfreeze.{host}.{sleeper.pid}.{alive}.00000003.tmp": True,  # a live run
            f".m.pb.graphfreeze.{host}.{me}.{temporaries._start_ticks(me)}.00000004.tmp": True,  # mine
            ".m.pb.graphfreeze.otherhost.12.34.00000005.tmp": True,  # maybe alive elsewhere
            ".m.pb.graphfreeze.oldhost.12.34.00000006.tmp": False,  # elsewhere, a day old
            f".other.pb.graphfreeze.{host}.999999999.5.00000007.tmp": True,  # not this output's
            ".m.pb.tmp-12345678": True,  # not ours
            "m.pb.graphfreeze.x": True,
        }
        for name in names:
            (tmp_path / name).mkdir() if name.endswith("3.tmp") else (tmp_path / name).write_bytes(b"")
        day_ago = time.time() - temporaries.STALE_SECONDS - 60
        os.utime(tmp_path / ".m.pb.graphfreeze.oldhost.12.34.00000006.tmp", (day_ago, day_ago))
        removed = temporaries.sweep(str(tmp_path / "m.pb"))
        assert sorted(os.path.basename(p) for p in removed) == sorted(k for k, v in names.items() if not v)
        assert sorted(os.listdir(tmp_path)) == sorted(k for k, v in names.items() if v)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_signals_wait_for_the_end_of_a_deferred_block():
    import signal

    got = []
    saved = signal.signal(signal.SIGHUP, lambda signum, frame: got.append(signum))
    try:
        with temporaries.signals_deferred():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.01)
            assert got == []  # held
        assert got == [signal.SIGHUP]  # delivered to the handler there was
    finally:
        signal.signal(signal.SIGHUP, saved)


def test_a_private_tempdir_takes_temporary_files_and_is_removed(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    dead = tmp_path / f".graphfreeze-run.graphfreeze.{temporaries._HOST}.999999999.5.0000000a.tmp"
    dead.mkdir()  # a killed run's
    with temporaries.private_tempdir() as private:
        assert not dead.exists()
        assert tempfile.gettempdir() == private == os.environ["TMPDIR"]
        assert os.path.dirname(private) == str(tmp_path)
        tempfile.mkdtemp(prefix="graphfreeze-job-")
    assert os.listdir(tmp_path) == [] and os.environ["TMPDIR"] == str(tmp_path)
    assert tempfile.gettempdir() == str(tmp_path)


def test_a_private_tempdir_takes_the_homes_libraries_write_in_unless_the_user_has_one(
        tmp_path, monkeypatch):
    """XDG_CACHE_HOME (onnxruntime's device id) always; KERAS_HOME only while no keras.json is
    there to be read (Keras writes one then); both as they were after."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/elsewhere")
    with temporaries.private_tempdir() as path:
        assert os.environ["XDG_CACHE_HOME"] == os.path.join(path, "cache")
        assert os.environ["KERAS_HOME"] == os.path.join(path, "keras")
    assert os.environ["XDG_CACHE_HOME"] == "/elsewhere" and "KERAS_HOME" not in os.environ
    (tmp_path / ".keras").mkdir()
    (tmp_path / ".keras" / "keras.json").write_text('{"floatx": "float32"}')
    with temporaries.private_tempdir():
        assert "KERAS_HOME" not in os.environ  # the user's keras.json keeps its say
