"""TensorFlow's C API (`tensorflow/c/c_api.h`) by ctypes: the installed TensorFlow's own
`libtensorflow_framework.so.2` and `libtensorflow_cc.so.2`, loaded once, the functions
`graph.c_session` calls typed as the header declares them. Loaded RTLD_LOCAL: made global, its
BoringSSL symbols crash Python's `_hashlib` imported after it."""

from __future__ import annotations

import ctypes
import threading


class Output(ctypes.Structure):
    _fields_ = [("oper", ctypes.c_void_p), ("index", ctypes.c_int)]


P, INT, S, I64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_int64
_SIGNATURES = {
    "TF_NewStatus": ([], P), "TF_DeleteStatus": ([P], None), "TF_GetCode": ([P], INT),
    "TF_Message": ([P], ctypes.c_char_p), "TF_NewGraph": ([], P), "TF_DeleteGraph": ([P], None),
    "TF_NewImportGraphDefOptions": ([], P), "TF_DeleteImportGraphDefOptions": ([P], None),
    "TF_NewBufferFromString": ([ctypes.c_char_p, S], P), "TF_DeleteBuffer": ([P], None),
    "TF_GraphImportGraphDef": ([P, P, P, P], None),
    "TF_GraphOperationByName": ([P, ctypes.c_char_p], P),
    "TF_OperationNumOutputs": ([P], INT), "TF_OperationOutputType": ([Output], INT),
    "TF_GraphNextOperation": ([P, ctypes.POINTER(S)], P),
    "TF_OperationName": ([P], ctypes.c_char_p),
    "TF_GraphGetTensorNumDims": ([P, Output, P], INT),
    "TF_GraphGetTensorShape": ([P, Output, ctypes.POINTER(I64), INT, P], None),
    "TF_NewSessionOptions": ([], P), "TF_DeleteSessionOptions": ([P], None),
    "TF_SetConfig": ([P, ctypes.c_char_p, S, P], None), "TF_NewSession": ([P, P, P], P),
    "TF_LoadSessionFromSavedModel": ([P, P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), INT,
                                      P, P, P], P),
    "TF_CloseSession": ([P, P], None), "TF_DeleteSession": ([P, P], None),
    "TF_SessionRun": ([P, P, ctypes.POINTER(Output), ctypes.POINTER(P), INT,
                       ctypes.POINTER(Output), ctypes.POINTER(P), INT, ctypes.POINTER(P), INT,
                       P, P], None),
    "TF_AllocateTensor": ([INT, ctypes.POINTER(I64), INT, S], P), "TF_DeleteTensor": ([P], None),
    "TF_TensorData": ([P], P), "TF_TensorByteSize": ([P], S), "TF_TensorType": ([P], INT),
    "TF_NumDims": ([P], INT), "TF_Dim": ([P, INT], I64),
}


_LOADING = threading.Lock()
_LOADED: list = []  # [the library, or None where it cannot be loaded]


def library():
    """TensorFlow's C library, its functions typed (loaded once; None where it cannot be)."""
    with _LOADING:  # (two threads redirecting stderr at once would leave it redirected)
        if not _LOADED:
            _LOADED.append(_load())
    return _LOADED[0]


def _load():
    import importlib.util
    from pathlib import Path

    from graphfreeze.process.quiet import native_stderr_off

    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    try:
        with native_stderr_off():  # oneDNN's and the CUDA probe's start-up lines
            ctypes.CDLL(str(folder / "libtensorflow_framework.so.2"))
            lib = ctypes.CDLL(str(folder / "libtensorflow_cc.so.2"))
        for name, (args, result) in _SIGNATURES.items():
            function = getattr(lib, name)
            function.argtypes, function.restype = args, result
    except (OSError, AttributeError):
        return None
    return lib


def load() -> bool:
    """Load the library now (a child process does, at its start); whether it loaded."""
    return library() is not None
