"""TensorFlow in a child process, for a run whose own work needs none of it.

A checkpoint or frozen graph frozen to a `.pb` is read, frozen and written on the floor (protobuf
and numpy); what needs TensorFlow itself (the importer's check of the graph, shape inference of
its outputs, verification's runs of the original and of the artifact) goes to one child process
started at once, which imports TensorFlow while this one works. `call`/`submit` run a function
there while this process has not imported TensorFlow, else here: the same function, the same
result, either way.

The child runs `serve()` in a new interpreter: calls and results are pickled
over its stdin and a copy of its stdout (its own stdout goes to stderr), one at a time, in order
(not multiprocessing: spawning would run the caller's `__main__` again).
"""

from __future__ import annotations

import io
import os
import pickle
import queue
import sys
import threading
from concurrent.futures import Future

KEY = "tensorflow_child"
# the child's program; the working directory (the model's folder) is not on its import path
_MAIN = ("import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
         "from graphfreeze.process.tensorflow_child import serve; serve()")


class _Pickler(pickle.Pickler):
    """Pickles protobuf messages as their bytes and type name: pickling the class itself would
    import its module, `tensorflow.core.framework...` (the floor's copies keep that name)."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)

    def reducer_override(self, obj):
        from google.protobuf.message import Message

        if isinstance(obj, Message):
            return _message, (obj.DESCRIPTOR.full_name, obj.SerializeToString())
        return NotImplemented


def _message(full_name: str, data: bytes):
    from google.protobuf import descriptor_pool, message_factory
    from graphfreeze.proto.tf import graph_pb2, meta_graph_pb2  # noqa: F401 -- in the pool

    cls = message_factory.GetMessageClass(descriptor_pool.Default().FindMessageTypeByName(
        full_name))
    return cls.FromString(data)


class Child:
    """One child process that imports TensorFlow at once, then runs the calls sent to it."""

    def __init__(self):
        import subprocess

        self._process = subprocess.Popen([sys.executable, "-c", _MAIN],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._read, daemon=True, name="tensorflow-child-read").start()
        threading.Thread(target=self._write, daemon=True, name="tensorflow-child-write").start()

    def submit(self, fn, *args) -> Future:
        """`fn(*args)` sent in order, by a thread: the child reads nothing until TensorFlow is
        imported, and a graph is more than a pipe holds."""
        future = Future()
        data = io.BytesIO()
        key = id(future)
        try:
            _Pickler(data).dump((key, fn, args))
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            future.set_exception(RuntimeError(f"cannot send {fn.__name__} to the TensorFlow "
                                              f"child process: {err}"))
            return future
        with self._lock:
            self._pending[key] = future
            self._calls.put(data.getvalue())
        return future

    def _write(self) -> None:
        while (data := self._calls.get()) is not None:
            try:
                self._process.stdin.write(data)
                self._process.stdin.flush()
            except (OSError, ValueError):  # it ended, or close() closed the pipe
                return  # the reader fails what is pending

    def _read(self) -> None:
        while True:
            try:
                key, ok, value = pickle.load(self._process.stdout)
            except Exception:  # noqa: BLE001 -- it ended (closed, killed): every call fails
                with self._lock:
                    for future in self._pending.values():
                        future.set_exception(RuntimeError("the TensorFlow child process ended"))
                    self._pending.clear()
                return
            with self._lock:
                future = self._pending.pop(key)
            (future.set_result if ok else future.set_exception)(value)

    def close(self) -> None:
        """End the child (a call under way is abandoned)."""
        self._calls.put(None)
        try:
            self._process.stdin.close()
        except OSError:
            pass
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()


def start(memo: dict) -> None:
    """Start the child for this run (kept in its memo) unless TensorFlow is imported here."""
    if "tensorflow" not in sys.modules and KEY not in memo:
        memo[KEY] = Child()


def stop(memo: dict) -> None:
    child = memo.pop(KEY, None)
    if child is not None:
        child.close()


def _child(memo: dict) -> Child | None:
    return memo.get(KEY) if "tensorflow" not in sys.modules else None


def running(memo: dict) -> bool:
    """Whether calls go to the child (there is one, and no TensorFlow here)."""
    return _child(memo) is not None


def submit(memo: dict, fn, *args) -> Future:
    """`fn(*args)` in the child if there is one (and this process has no TensorFlow), else here,
    at once; a Future either way."""
    child = _child(memo)
    if child is not None:
        return child.submit(fn, *args)
    done = Future()
    try:
        done.set_result(fn(*args))
    except Exception as err:  # noqa: BLE001 -- raised by result(), as the child's would be
        done.set_exception(err)
    return done


def call(memo: dict, fn, *args):
    """`fn(*args)`, in the child if there is one."""
    child = _child(memo)
    return child.submit(fn, *args).result() if child is not None else fn(*args)


def serve() -> None:
    """The child's loop: TensorFlow imported first, then the calls, two at a time (the
    original's run and the artifact's overlap; TensorFlow releases the GIL as it runs)."""
    import signal
    from concurrent.futures import ThreadPoolExecutor

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's: it ends this child
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the calls print goes to stderr, never into the replies
    sys.stdout = sys.stderr
    import graphfreeze  # noqa: F401 -- the environment TensorFlow reads at import
    from graphfreeze.process.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()
    import tensorflow  # noqa: F401 -- with logs on (--debug), imported here
    lock = threading.Lock()

    def answer(key, fn, args) -> None:
        try:
            reply = (key, True, fn(*args))
        except Exception as err:  # noqa: BLE001 -- the caller raises it
            reply = (key, False, err)
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # noqa: BLE001 -- what does not pickle: its text
            data = pickle.dumps((key, False, RuntimeError(f"{type(err).__name__}: {err}")))
        with lock:
            replies.write(data)
            replies.flush()

    with ThreadPoolExecutor(2) as pool:
        while True:
            try:
                key, fn, args = pickle.load(sys.stdin.buffer)
            except EOFError:
                return
            pool.submit(answer, key, fn, args)
