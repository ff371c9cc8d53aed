"""onnxruntime in a child process, for models with onnxruntime-extensions' ops once
`tensorflow_text` is loaded here: both carry their own SentencePiece and protobuf, and
onnxruntime-extensions' SentencepieceTokenizer crashes the process (a segfault) when its session
is made beside TF-Text's. The child imports no TensorFlow; arrays go both ways pickled over its
stdin/stdout (our own child's answers, nothing read from a model file)."""

from __future__ import annotations

import sys

from graphfreeze.errors import RunError


def needed() -> bool:
    """Whether a session with onnxruntime-extensions must run outside this process."""
    return "tensorflow_text" in sys.modules


class _Output:
    def __init__(self, name: str):
        self.name = name


class IsolatedSession:
    """The part of onnxruntime's InferenceSession the runtime uses (`run`, `get_outputs`),
    in a child process; RunError for what the session raises there."""

    def __init__(self, model, threads: int, as_defined: bool, app: bool):
        import os
        import subprocess
        import weakref

        path = os.pathsep.join(p for p in sys.path if p)  # graphfreeze importable as it is here
        self._child = subprocess.Popen(
            [sys.executable, "-m", "graphfreeze.formats.onnx.isolated"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": path})
        weakref.finalize(self, _stop, self._child)
        self._outputs = [_Output(n) for n in self._ask(("open", model, threads, as_defined, app))]

    def _ask(self, message):
        import pickle

        try:
            pickle.dump(message, self._child.stdin)
            self._child.stdin.flush()
            kind, value = pickle.load(self._child.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as err:
            raise RunError(f"onnxruntime's process ended (exit {self._child.poll()})") from err
        if kind == "error":
            raise RunError(value)
        if kind == "failed":
            raise RuntimeError(value)  # the caller says what failed, as for its own session
        return value

    def get_outputs(self) -> list:
        return self._outputs

    def run(self, names, feeds, run_options=None):
        return self._ask(("run", names, feeds))


def ort_session(model, threads: int, as_defined: bool = False, app: bool = False,
                contrib: bool = False):
    """An onnxruntime session in this process on a path or serialized model: `app` as an app
    makes it, `as_defined` with graph optimizations off, `contrib` with onnxruntime-extensions'
    ops registered."""
    import onnxruntime as ort
    from graphfreeze.errors import first_line

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if contrib:
        from graphfreeze.formats.onnx.text_ops import register

        register(options)
    if app:
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    elif as_defined:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 -- onnxruntime's errors for a model
        raise RunError(f"onnxruntime cannot load it ({first_line(err)})") from err


def _stop(child) -> None:
    if child.poll() is None:
        child.stdin.close()
        try:
            child.wait(timeout=10)
        except Exception:  # noqa: BLE001 -- a child that hangs is killed
            child.kill()


def _serve() -> None:
    """The child: answer ("open", model, threads, as_defined, app) then ("run", names, feeds)
    messages until stdin closes. Its fd 1 goes to stderr (native libraries' prints), answers
    to the original stdout."""
    import os
    import pickle

    import onnxruntime as ort
    from graphfreeze.errors import first_line

    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    ort.set_default_logger_severity(3)  # errors only, as the parent's own sessions
    session = None
    while True:
        try:
            message = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        try:
            if message[0] == "open":
                _, model, threads, as_defined, app = message
                session = ort_session(model, threads, as_defined, app, contrib=True)
                answer = ("ok", [o.name for o in session.get_outputs()])
            else:
                answer = ("ok", session.run(message[1], message[2]))
        except RunError as err:
            answer = ("error", str(err))
        except Exception as err:  # noqa: BLE001 -- onnxruntime's errors for the feeds
            answer = ("failed", first_line(err))
        pickle.dump(answer, answers)
        answers.flush()


if __name__ == "__main__":
    _serve()
