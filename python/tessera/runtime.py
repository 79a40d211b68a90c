"""A ctypes binding over the Tessera runtime's C API (libtessera_runtime.so).

It loads an artifact directory made by ``tessera-compile`` and calls its entry
on NumPy arrays, in-process: gradient tests call a compiled program thousands
of times this way::

    from tessera.runtime import Artifact
    art = Artifact("build/model.art")
    print([(i.name, i.dtype, i.shape, i.role) for i in art.inputs])
    loss, *updates = art(*arrays)

The library is ``$TESSERA_RUNTIME_LIB`` if set, else
``build/lib/libtessera_runtime.so`` under the repository root. It is loaded
with ``RTLD_GLOBAL`` so that compiled code resolves the runtime's
``_mlir_memref_to_llvm_*`` allocation functions against it.
"""

import collections
import ctypes
import os
import pathlib

import numpy as np

__all__ = [
    "Artifact",
    "TensorInfo",
    "TesseraError",
    "memory_stats",
    "reset_memory_peak",
    "tensor_memory_stats",
]

# tsr_dtype_t (ONNX TensorProto.DataType numbers) and their manifest names.
_DTYPE_NAMES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
    7: "int64", 9: "bool", 10: "float16", 11: "float64", 12: "uint32",
    13: "uint64", 16: "bfloat16",
}
_BFLOAT16 = 16
# NumPy has no bfloat16: such tensors travel as uint16 bit patterns.
_NUMPY_DTYPES = {
    name: np.dtype("uint16" if name == "bfloat16" else name)
    for name in _DTYPE_NAMES.values()
}
_CODES = {np.dtype(name): code for code, name in _DTYPE_NAMES.items()
          if name != "bfloat16"}
# tsr_role_t.
_ROLES = {0: None, 1: "data", 2: "label", 3: "param", 4: "state", 5: "loss",
          6: "metric", 7: "grad", 8: "rng"}

TensorInfo = collections.namedtuple(
    "TensorInfo", ["name", "dtype", "shape", "role", "updates", "of", "init"])
TensorInfo.__doc__ = """One input or output of a manifest.

name, dtype (the manifest spelling, e.g. "float32"), shape (a tuple), role
("param", "state", "data", "label", "rng", "loss", "metric", "grad", or None for an
output without one), updates (a param or state output: the index of the input
it replaces, else None), of (a grad output: the index of its input, else
None), init (a state input: its initial value, else None)."""


class TesseraError(RuntimeError):
    """A failing runtime call; the message is the runtime's one-line error."""


class _TensorInfoStruct(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_size_t),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("role", ctypes.c_int),
        ("updates", ctypes.c_int64),
        ("of", ctypes.c_int64),
        ("init", ctypes.c_double),
        ("shards", ctypes.c_int64),
        ("global_rank", ctypes.c_size_t),
        ("global_shape", ctypes.POINTER(ctypes.c_int64)),
    ]


_library = None


def _library_path():
    path = os.environ.get("TESSERA_RUNTIME_LIB")
    if path:
        return path
    root = pathlib.Path(__file__).resolve().parents[2]
    return str(root / "build" / "lib" / "libtessera_runtime.so")


def _declare(lib):
    p, size, status = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    signatures = {
        "tsr_last_error": (ctypes.c_char_p, []),
        "tsr_artifact_load": (status, [ctypes.c_char_p, ctypes.POINTER(p)]),
        "tsr_artifact_destroy": (None, [p]),
        "tsr_artifact_mode": (ctypes.c_char_p, [p]),
        "tsr_artifact_num_inputs": (size, [p]),
        "tsr_artifact_num_outputs": (size, [p]),
        "tsr_artifact_input_info":
            (status, [p, size, ctypes.POINTER(_TensorInfoStruct)]),
        "tsr_artifact_output_info":
            (status, [p, size, ctypes.POINTER(_TensorInfoStruct)]),
        "tsr_artifact_check_input": (status, [p, size, p]),
        "tsr_artifact_create_output": (status, [p, size, ctypes.POINTER(p)]),
        "tsr_artifact_invoke":
            (status, [p, ctypes.POINTER(p), size, ctypes.POINTER(p), size]),
        "tsr_tensor_create": (status, [ctypes.c_int, size,
                                       ctypes.POINTER(ctypes.c_int64),
                                       ctypes.POINTER(p)]),
        "tsr_tensor_destroy": (None, [p]),
        "tsr_tensor_data": (p, [p]),
        "tsr_tensor_byte_size": (size, [p]),
        "tsr_memory_stats": (None, [ctypes.POINTER(size), ctypes.POINTER(size)]),
        "tsr_tensor_memory_stats":
            (None, [ctypes.POINTER(size), ctypes.POINTER(size)]),
        "tsr_memory_reset_peak": (None, []),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes


def _lib():
    global _library
    if _library is None:
        path = _library_path()
        if not os.path.exists(path):
            raise TesseraError(
                f"{path}: the Tessera runtime library does not exist (build "
                "it, or set TESSERA_RUNTIME_LIB)")
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        _declare(lib)
        _library = lib
    return _library


def _check(status):
    if status != 0:
        raise TesseraError(_lib().tsr_last_error().decode())


def _info(function, handle, index):
    raw = _TensorInfoStruct()
    _check(function(handle, index, ctypes.byref(raw)))
    role = _ROLES.get(raw.role)
    return TensorInfo(
        name=raw.name.decode(),
        dtype=_DTYPE_NAMES.get(raw.dtype, "invalid"),
        shape=tuple(raw.shape[d] for d in range(raw.rank)),
        role=role,
        updates=raw.updates if raw.updates >= 0 else None,
        of=raw.of if raw.of >= 0 else None,
        init=raw.init if role == "state" else None,
    )


class Artifact:
    """A loaded artifact: its manifest's inputs and outputs, and its entry.

    Calling it invokes the entry once on the given arrays (one per input, in
    manifest order) and returns the outputs as new NumPy arrays. The runtime
    checks every array's dtype and shape against the manifest. bfloat16
    tensors are passed and returned as uint16 arrays of their bit patterns.
    """

    def __init__(self, path):
        lib = _lib()
        handle = ctypes.c_void_p()
        _check(lib.tsr_artifact_load(os.fsencode(path), ctypes.byref(handle)))
        self._handle = handle
        self.path = str(path)
        self.mode = lib.tsr_artifact_mode(handle).decode()
        self.inputs = [_info(lib.tsr_artifact_input_info, handle, i)
                       for i in range(lib.tsr_artifact_num_inputs(handle))]
        self.outputs = [_info(lib.tsr_artifact_output_info, handle, i)
                        for i in range(lib.tsr_artifact_num_outputs(handle))]

    def close(self):
        """Unloads the artifact; calling it afterwards raises."""
        if self._handle:
            _lib().tsr_artifact_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) and _library is not None:
            self.close()

    def _tensor(self, index, array):
        """A runtime tensor holding a copy of `array`, for input `index`."""
        lib = _lib()
        array = np.asarray(array, order="C")
        code = _CODES.get(array.dtype)
        if code is None:
            raise TypeError(f"input {index} '{self.inputs[index].name}': "
                            f"NumPy dtype {array.dtype} has no runtime dtype")
        if code == 4 and self.inputs[index].dtype == "bfloat16":
            code = _BFLOAT16
        shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
        tensor = ctypes.c_void_p()
        _check(lib.tsr_tensor_create(code, array.ndim, shape,
                                     ctypes.byref(tensor)))
        ctypes.memmove(lib.tsr_tensor_data(tensor), array.ctypes.data,
                       array.nbytes)
        return tensor

    def __call__(self, *arrays):
        if not self._handle:
            raise TesseraError(f"{self.path}: the artifact is closed")
        if len(arrays) != len(self.inputs):
            raise TypeError(f"{self.path} takes {len(self.inputs)} inputs, "
                            f"got {len(arrays)}")
        lib = _lib()
        tensors = []
        try:
            for index, array in enumerate(arrays):
                tensors.append(self._tensor(index, array))
                _check(lib.tsr_artifact_check_input(self._handle, index,
                                                    tensors[-1]))
            outputs = []
            for index in range(len(self.outputs)):
                tensor = ctypes.c_void_p()
                _check(lib.tsr_artifact_create_output(
                    self._handle, index, ctypes.byref(tensor)))
                tensors.append(tensor)
                outputs.append(tensor)
            inputs = tensors[:len(arrays)]
            _check(lib.tsr_artifact_invoke(
                self._handle, (ctypes.c_void_p * max(len(inputs), 1))(*inputs),
                len(inputs),
                (ctypes.c_void_p * max(len(outputs), 1))(*outputs),
                len(outputs)))
            results = []
            for info, tensor in zip(self.outputs, outputs):
                result = np.empty(info.shape, _NUMPY_DTYPES[info.dtype])
                ctypes.memmove(result.ctypes.data, lib.tsr_tensor_data(tensor),
                               lib.tsr_tensor_byte_size(tensor))
                results.append(result)
            return results
        finally:
            for tensor in tensors:
                lib.tsr_tensor_destroy(tensor)


def _stats(function):
    current, peak = ctypes.c_size_t(), ctypes.c_size_t()
    function(ctypes.byref(current), ctypes.byref(peak))
    return current.value, peak.value


def memory_stats():
    """(current, peak) bytes that compiled code holds through the runtime's
    allocation functions; the peak counts since the last reset."""
    return _stats(_lib().tsr_memory_stats)


def tensor_memory_stats():
    """(current, peak) bytes of the runtime's own tensors."""
    return _stats(_lib().tsr_tensor_memory_stats)


def reset_memory_peak():
    """Sets both peaks to the current values."""
    _lib().tsr_memory_reset_peak()
