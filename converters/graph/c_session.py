"""A GraphDef run through TensorFlow's C API (`tensorflow/c/c_api.h`), loaded by ctypes from the
installed TensorFlow's own `libtensorflow_cc.so.2`, without `import tensorflow`.

The session is the one `tf.compat.v1.Session` drives (DirectSession, the same importer, the
same kernels, `lean_config`'s options), so the numbers are the same; loading the library takes
~0.4 s where `import tensorflow` takes ~2.7 s. It runs numeric tensors only: anything else
(string feeds or fetches, a library it cannot load, an error from TensorFlow) raises
`Unsupported` and the caller runs the graph in TensorFlow's Python API instead, which says any
error in its own words.
"""

from __future__ import annotations

import ctypes
import threading

from graphfreeze.graph.c_library import I64, Output, P, library
from graphfreeze.graph.graphdefs import colocations, split_tensor

# tf.compat.v1.ConfigProto, serialized (tests/graph/test_c_session.py spells it out): grappler's
# meta optimizer off, graph optimizer at L0 with function inlining, optimize_for_static_graph
# (drops the session's graph copies); `session.lean_config` gives it to the Python API
LEAN_CONFIG = bytes.fromhex("52141a0d18ffffffffffffffffff01200152039801018201026001")

# what TensorFlow's client returns as plain numpy arrays: floats, integers, bool, complex
_NUMERIC = {1, 2, 3, 4, 5, 6, 8, 9, 10, 14, 17, 18, 19, 22, 23}


class Unsupported(Exception):
    """This graph, feed or fetch is not run here; TensorFlow's Python API runs it."""


def run(graph_def, feeds: dict, fetches: list[str], steps: tuple[tuple[str, ...], ...] = ()
        ) -> list:
    """Import `graph_def`, run each step's ops (fed `feeds`), then `fetches` fed `feeds`: what
    `tf.compat.v1.Session(config=lean_config())` returns."""
    with Session.of_graph(graph_def) as session:
        for ops in steps:
            session.run(feeds, [], ops)
        return session.run(feeds, fetches)


def imported(graph_def) -> Session:
    """A session-less Session of `graph_def` as `tf.graph_util.import_graph_def` takes it:
    TensorFlow's importer, and what its Python API checks itself (each `_class` attr a list of
    text; a device string is left to it)."""
    for node in graph_def.node:
        if node.device:
            raise Unsupported("a device")
        try:
            colocations(node)
        except ValueError as err:
            raise Unsupported(str(err)) from err
    return Session.of_graph(graph_def, run=False)


class Session:
    """A TF_Graph and the TF_Session on it (`of_graph`, `of_saved_model`), deleted by close()
    once no thread runs it. A status that is not OK raises Unsupported."""

    def __init__(self):
        self.lib = library()
        if self.lib is None:
            raise Unsupported("TensorFlow's C library is not loadable")
        self.status, self.graph, self.session = self.lib.TF_NewStatus(), self.lib.TF_NewGraph(), None
        self._running, self._idle = 0, threading.Condition()

    @classmethod
    def of_graph(cls, graph_def, config: bytes = LEAN_CONFIG, run: bool = True) -> Session:
        """`graph_def` as TensorFlow's importer takes it (its checks, its shape inference);
        with a session to `run` it."""
        self = cls()
        lib = self.lib
        data = graph_def.SerializeToString()
        buffer, options = lib.TF_NewBufferFromString(data, len(data)), \
            lib.TF_NewImportGraphDefOptions()
        try:
            lib.TF_GraphImportGraphDef(self.graph, buffer, options, self.status)
            self._check()
            if run:
                self._new_session(lambda opts: lib.TF_NewSession(self.graph, opts, self.status),
                                  config)
        except BaseException:
            self.close()
            raise
        finally:
            lib.TF_DeleteImportGraphDefOptions(options)
            lib.TF_DeleteBuffer(buffer)
        return self

    @classmethod
    def of_saved_model(cls, folder: str, tag: str, config: bytes) -> Session:
        """The SavedModel in `folder` as TensorFlow's C++ loader loads it (TF1's loader, the
        one TensorFlow Serving uses): its graph, its variables restored, its init op run."""
        self = cls()
        lib = self.lib
        tags = (ctypes.c_char_p * 1)(tag.encode())
        try:
            self._new_session(lambda opts: lib.TF_LoadSessionFromSavedModel(
                opts, None, folder.encode(), tags, 1, self.graph, None, self.status), config)
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        with self._idle:
            self._idle.wait_for(lambda: not self._running)
            self._delete()

    def _delete(self) -> None:
        lib = self.lib
        if self.session:
            lib.TF_CloseSession(self.session, self.status)
            lib.TF_DeleteSession(self.session, self.status)
            self.session = None
        if self.graph:
            lib.TF_DeleteGraph(self.graph)
            self.graph = None
        if self.status:
            lib.TF_DeleteStatus(self.status)
            self.status = None

    def _check(self, status=None) -> None:
        status = status or self.status
        if self.lib.TF_GetCode(status):
            raise Unsupported(self.lib.TF_Message(status).decode(errors="replace"))

    def _new_session(self, make, config: bytes) -> None:
        lib = self.lib
        options = lib.TF_NewSessionOptions()
        try:
            lib.TF_SetConfig(options, config, len(config), self.status)
            self._check()
            self.session = make(options)
        finally:
            lib.TF_DeleteSessionOptions(options)
        self._check()

    def run(self, feeds: dict, fetches: list[str], targets: tuple[str, ...] = ()) -> list:
        """`fetches` (tensor names) after running `targets` (op names), fed `feeds`; each call
        has its own status, so threads may share the session."""
        lib = self.lib
        with self._idle:
            if not self.graph:
                raise Unsupported("the session is closed")
            self._running += 1
        status, tensors = lib.TF_NewStatus(), []
        try:
            inputs = [self._feed(name, value, status, tensors) for name, value in feeds.items()]
            outputs = [self._output(name) for name in fetches]
            if any(lib.TF_OperationOutputType(out) not in _NUMERIC for out in outputs):
                raise Unsupported("a fetch is not numeric")
            ops = [self._operation(name) for name in targets]
            fed = (Output * max(len(inputs), 1))(*(out for out, _ in inputs))
            values = (P * max(len(inputs), 1))(*(tensor for _, tensor in inputs))
            wanted = (Output * max(len(outputs), 1))(*outputs)
            results = (P * max(len(outputs), 1))()
            lib.TF_SessionRun(self.session, None, fed, values, len(inputs), wanted, results,
                              len(outputs), (P * max(len(ops), 1))(*ops), len(ops), None,
                              status)
            got = [results[i] for i in range(len(outputs))]
            tensors.extend(t for t in got if t)
            self._check(status)
            return [self._array(tensor) for tensor in got]
        finally:
            for tensor in tensors:
                lib.TF_DeleteTensor(tensor)
            lib.TF_DeleteStatus(status)
            with self._idle:
                self._running -= 1
                self._idle.notify_all()

    def tensor_type(self, tensor: str) -> tuple[int, tuple[int | None, ...] | None]:
        """(DataType value, static shape: None if the rank is unknown) TensorFlow's shape
        inference gave `tensor` ("node:index") on import."""
        lib, out = self.lib, self._output(tensor)
        status = lib.TF_NewStatus()
        try:
            rank = lib.TF_GraphGetTensorNumDims(self.graph, out, status)
            self._check(status)
            if rank < 0:
                return lib.TF_OperationOutputType(out), None
            dims = (I64 * max(rank, 1))()
            lib.TF_GraphGetTensorShape(self.graph, out, dims, rank, status)
            self._check(status)
        finally:
            lib.TF_DeleteStatus(status)
        return lib.TF_OperationOutputType(out), tuple(None if d < 0 else d for d in dims[:rank])

    def output_types(self, node: str) -> list[tuple[int, tuple[int | None, ...] | None]]:
        """`tensor_type` of each output of `node`."""
        count = self.lib.TF_OperationNumOutputs(self._operation(node))
        return [self.tensor_type(f"{node}:{index}") for index in range(count)]

    def _operation(self, name: str):
        found = self.lib.TF_GraphOperationByName(self.graph, name.encode())
        if not found:
            raise Unsupported(f"no operation {name}")
        return found

    def _output(self, tensor: str) -> Output:
        name, index = split_tensor(tensor)
        oper = self._operation(name)
        if not 0 <= index < self.lib.TF_OperationNumOutputs(oper):
            raise Unsupported(f"no tensor {tensor}")
        return Output(oper, index)

    def _feed(self, name: str, value, status, tensors: list) -> tuple[Output, int]:
        """(output, tensor): `value` as the client converts a feed (`numpy_compat.np_asarray`
        to the tensor's dtype), checked against its static shape as the client checks it."""
        import numpy as np
        from graphfreeze.proto.dtypes import numpy_dtype

        lib = self.lib
        out = self._output(name)
        dtype = lib.TF_OperationOutputType(out)
        if dtype not in _NUMERIC:
            raise Unsupported(f"feed {name} is not numeric")
        wanted = numpy_dtype(dtype)
        try:
            array = np.asarray(value).astype(wanted) if np.issubdtype(wanted, np.number) \
                else np.asarray(value, dtype=wanted)
        except (TypeError, ValueError, OverflowError) as err:
            raise Unsupported(f"feed {name}: {err}") from err
        if not array.flags.c_contiguous:
            array = array.copy(order="C")
        rank = lib.TF_GraphGetTensorNumDims(self.graph, out, status)
        self._check(status)
        if rank >= 0:
            dims = (I64 * max(rank, 1))()
            lib.TF_GraphGetTensorShape(self.graph, out, dims, rank, status)
            self._check(status)
            if array.ndim != rank or any(d >= 0 and d != s for d, s in zip(dims[:rank], array.shape,
                                                                           strict=True)):
                raise Unsupported(f"feed {name} has another shape")
        shape = (I64 * max(array.ndim, 1))(*array.shape)
        tensor = lib.TF_AllocateTensor(dtype, shape, array.ndim, array.nbytes)
        if not tensor:
            raise Unsupported("no memory for a feed")
        tensors.append(tensor)
        if array.nbytes:
            ctypes.memmove(lib.TF_TensorData(tensor), array.ctypes.data, array.nbytes)
        return out, tensor

    def _array(self, tensor):
        """The tensor's value as the Python client gives it (a numpy scalar for a scalar)."""
        import numpy as np
        from graphfreeze.proto.dtypes import numpy_dtype

        lib = self.lib
        dtype = numpy_dtype(lib.TF_TensorType(tensor))
        shape = tuple(lib.TF_Dim(tensor, i) for i in range(lib.TF_NumDims(tensor)))
        size = lib.TF_TensorByteSize(tensor)
        array = np.empty(shape, dtype)
        if size:
            ctypes.memmove(array.ctypes.data, lib.TF_TensorData(tensor), min(size, array.nbytes))
        return array[()] if not shape else array
