"""TensorFlow in a child process, for a run whose own work needs none of it.

A checkpoint or frozen graph frozen to a `.pb` is read, frozen and written on the floor (protobuf
and numpy); what needs TensorFlow itself (the importer's check of the graph, shape inference of
its outputs, verification's runs of the original and of the artifact) goes to one child process
started at once, which loads TensorFlow while this one works: its C library, through which it
checks, shapes and runs the graphs (`graph.c_session`), and its Python API only when a call
needs it (a string tensor, an error to put in TensorFlow's words).
`call`/`submit` run a function there while this process has not imported TensorFlow, else
here: the same function, the same result, either way.

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

from graphfreeze.proto.ops import tensorflow_imported

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
    """One child process that loads TensorFlow's C library at once (the graphs it runs go
    through it: `graph.c_session`), its Python API when a call imports it, and runs the calls
    sent to it.

    Each message is a pickled (key, ok, payload) whose payload is pickled on its own, so a call
    or a result that does not unpickle fails that call alone; a call's payload follows its
    (key, True, size) as raw bytes (a graph's are written from the pickler's buffer, uncopied)."""

    def __init__(self):
        import subprocess

        self._process = subprocess.Popen([sys.executable, "-c", _MAIN],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._pending: dict[int, Future] = {}
        self._ended: str | None = None  # why calls fail at once (the child is gone)
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
            _Pickler(data).dump((fn, args))
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            future.set_exception(RuntimeError(f"cannot send {fn.__name__} to the TensorFlow "
                                              f"child process: {err}"))
            return future
        with self._lock:
            if self._ended:
                future.set_exception(RuntimeError(self._ended))
                return future
            self._pending[key] = future
            self._calls.put((pickle.dumps((key, True, data.tell())), data))
        return future

    def _write(self) -> None:
        while (call := self._calls.get()) is not None:
            header, data = call
            try:
                self._process.stdin.write(header)
                self._process.stdin.write(data.getbuffer())  # (the pickled call, not a copy)
                self._process.stdin.flush()
            except (OSError, ValueError):  # it ended, or close() closed the pipe
                return  # the reader fails what is pending

    def _read(self) -> None:
        while True:
            try:
                key, ok, payload = pickle.load(self._process.stdout)
            except Exception:  # noqa: BLE001 -- it ended (closed, killed): every call fails
                self._end()
                return
            try:
                value = pickle.loads(payload)
            except Exception as err:  # noqa: BLE001 -- that call's result, not the channel
                ok, value = False, RuntimeError(f"the TensorFlow child process's answer does "
                                                f"not unpickle here: {err}")
            with self._lock:
                future = self._pending.pop(key, None)
            if future is not None:
                (future.set_result if ok else future.set_exception)(value)

    def _end(self) -> None:
        import subprocess

        try:
            code = self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # its answers stopped but it lives on: end it
            self._process.kill()
            code = self._process.wait()
        why = f"the TensorFlow child process ended (exit {code}); run with --debug to see why"
        with self._lock:
            self._ended = why
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(RuntimeError(why))

    def close(self) -> None:
        """End the child (a call under way is abandoned)."""
        self._calls.put(None)
        if self._process.poll() is None:
            self._process.kill()  # first: closing a pipe a write blocks on waits for the write
        try:
            self._process.stdin.close()
        except (OSError, ValueError):
            pass
        self._process.wait()


def start(memo: dict, now: bool = True) -> None:
    """Start the child for this run (kept in its memo) unless TensorFlow is imported here; not
    `now`: at the first call sent to it (a run that may need none)."""
    if "tensorflow" not in sys.modules and KEY not in memo:
        memo[KEY] = Child() if now else _Later()


class _Later:
    """A child started by the first call sent to it."""


class _Stopped:
    """What a run's memo holds once its child is stopped: a late call (a thread still running
    when the run failed) fails instead of importing TensorFlow here."""

    def submit(self, fn, *args) -> Future:
        done = Future()
        done.set_exception(RuntimeError("the run has ended"))
        return done


def stop(memo: dict) -> None:
    child = memo.get(KEY)
    if isinstance(child, (Child, _Later)):
        memo[KEY] = _Stopped()
    if isinstance(child, Child):
        child.close()


def _child(memo: dict) -> Child | _Stopped | None:
    return memo.get(KEY) if "tensorflow" not in sys.modules else None


def running(memo: dict) -> bool:
    """Whether calls go to the child (there is one, and no TensorFlow here)."""
    return _child(memo) is not None


def submit(memo: dict, fn, *args) -> Future:
    """`fn(*args)` in the child if there is one (and this process has no TensorFlow), else here,
    at once; a Future either way."""
    child = _child(memo)
    if isinstance(child, _Later):
        child = memo[KEY] = Child()
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
    return submit(memo, fn, *args).result() if _child(memo) is not None else fn(*args)


python_imported = tensorflow_imported  # (called in the child by name)


def imported(module: str) -> bool:
    """Whether `module` is in this process's modules (called in the child by name)."""
    return module in sys.modules


def one_import_at_a_time() -> None:
    """Two threads importing TensorFlow's Python API at once deadlock in the import system (one
    holds `tensorflow`'s module lock and waits for a submodule's, the other the reverse). So
    (in the child, and in the parent once a stage's thread may import it) the first import of
    any `tensorflow` module imports `tensorflow` itself first, under one lock; the others wait
    for it. Installed once per process, until TensorFlow is imported."""
    import builtins

    if getattr(builtins.__import__, "one_at_a_time", False) or python_imported():
        return
    once = threading.RLock()
    plain = builtins.__import__

    def guarded(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        if python_imported():  # nothing left to guard: the plain import back
            if builtins.__import__ is guarded:
                builtins.__import__ = plain
        elif level == 0 and name.partition(".")[0] == "tensorflow":
            with once:
                plain("tensorflow")
        return plain(name, globals, locals, fromlist, level)

    guarded.one_at_a_time = True
    builtins.__import__ = guarded


def serve() -> None:
    """The child's loop: TensorFlow's C library loaded first, then the calls, two at a time
    (the original's run and the artifact's overlap; TensorFlow releases the GIL as it runs)."""
    import signal
    from concurrent.futures import ThreadPoolExecutor

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's: it ends this child
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the calls print goes to stderr, never into the replies
    sys.stdout = sys.stderr
    from graphfreeze.graph import c_library
    from graphfreeze.process.quiet import quiet_when_imported

    quiet_when_imported()  # (and the environment TensorFlow reads at import set up)
    c_library.load()
    # numpy before the calls, which import it at once from two threads otherwise: its modules
    # import each other, so one thread could get one half made ("cannot import name
    # 'asanyarray' from partially initialized module 'numpy._core.numeric'", ~1 run in 10)
    import numpy  # noqa: F401

    lock, unpickling = threading.Lock(), threading.Lock()
    one_import_at_a_time()

    def answer(key, call) -> None:
        try:
            with unpickling:  # it imports the call's modules: one thread at a time, as numpy
                fn, args = pickle.loads(call)
            reply = (True, fn(*args))
        except BaseException as err:  # noqa: BLE001 -- the caller raises it
            reply = (False, err if not type(err).__module__.startswith("tensorflow") else
                     RuntimeError(f"{type(err).__name__}: {err}"))  # (no TensorFlow there)
        try:
            payload = pickle.dumps(reply[1], protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # noqa: BLE001 -- what does not pickle: its text
            what = reply[1] if not reply[0] else err
            reply = (False, None)
            payload = pickle.dumps(RuntimeError(f"{type(what).__name__}: {what}"))
        with lock:
            replies.write(pickle.dumps((key, reply[0], payload)))
            replies.flush()

    with ThreadPoolExecutor(2) as pool:
        while True:
            try:
                key, _, size = pickle.load(sys.stdin.buffer)
                call = sys.stdin.buffer.read(size)
            except EOFError:
                return
            if len(call) < size:
                return  # (the caller ended while writing)
            pool.submit(answer, key, call)
