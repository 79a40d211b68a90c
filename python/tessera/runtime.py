"""A ctypes binding over the Tessera runtime's C API (libtessera_runtime.so).

It loads an artifact directory made by ``tessera-compile`` and calls its entry
on NumPy arrays, in-process: gradient tests call a compiled program thousands
of times this way::

    from tessera.runtime import Artifact
    art = Artifact("build/model.art")
    print([(i.name, i.dtype, i.shape, i.role) for i in art.inputs])
    loss, *updates = art(*arrays)

Under ``mpirun`` a per-rank program's collectives need a communicator bound
to each group of mesh axes they use (Comm.h)::

    world = Communicator.world()      # MPI; rank and size from mpirun
    mesh = world.mesh(art)            # a communicator per group of axes
    outputs = art(*arrays)
    total = world.all_reduce_sum(np.array([outputs[0]]))

A "train" artifact also trains in-process through the runtime's training
loop (tsr_trainer_run), as ``tessera-run --train`` does::

    records = art.train("data.npz", steps=100, checkpoint_dir="ckpt",
                        on_step=lambda r: print(r.step, r.loss))

The library is ``$TESSERA_RUNTIME_LIB`` if set, else the one an installed
package carries (``tessera/_lib``), else ``build/lib/libtessera_runtime.so``
under the repository root. It is loaded
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
    "EvalRecord",
    "StepRecord",
    "TrainLog",
    "TensorInfo",
    "TesseraError",
    "arena_bytes",
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
# tsr_placement_t's host memory (the others: device, pinned host).
_HOST = 0
# tsr_role_t.
_ROLES = {0: None, 1: "data", 2: "label", 3: "param", 4: "state", 5: "loss",
          6: "metric", 7: "grad", 8: "rng", 9: "sync"}

TensorInfo = collections.namedtuple(
    "TensorInfo", ["name", "dtype", "shape", "role", "updates", "of", "init"])
TensorInfo.__doc__ = """One input or output of a manifest.

name, dtype (the manifest spelling, e.g. "float32"), shape (a tuple), role
("param", "state", "data", "label", "rng", "sync", "loss", "metric", "grad", or None for an
output without one), updates (a param or state output: the index of the input
it replaces, else None), of (a grad output: the index of its input, else
None), init (a state input: its initial value, else None)."""


StepRecord = collections.namedtuple(
    "StepRecord",
    ["step", "steps", "loss", "seconds", "items_per_second", "unit",
     "loss_scale", "skipped", "page_faults"])
StepRecord.__doc__ = """One completed training step (tsr_step_record_t).

step (counted from 1) of steps, loss (may be nan or inf), seconds (the time
of the step), items_per_second and unit ("tokens" or "samples"); with
dynamic loss scaling loss_scale (after the step) and skipped (the step found
a gradient overflow and kept the parameters), else 0.0 and False;
page_faults (the process's minor page faults during the step)."""

EvalRecord = collections.namedtuple(
    "EvalRecord", ["step", "loss", "batches", "samples", "seconds"])
EvalRecord.__doc__ = """One evaluation during training (tsr_eval_record_t):
after `step`, the mean loss of the artifact's evaluation program over
`batches` batches (`samples` samples or windows), which took `seconds`."""


class TrainLog(list):
    """The StepRecords of a run (a list), and its EvalRecords (`evals`)."""

    def __init__(self):
        super().__init__()
        self.evals = []


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


class _StepRecordStruct(ctypes.Structure):
    _fields_ = [
        ("step", ctypes.c_int64),
        ("steps", ctypes.c_int64),
        ("loss", ctypes.c_float),
        ("seconds", ctypes.c_double),
        ("items_per_second", ctypes.c_double),
        ("unit", ctypes.c_char_p),
        ("loss_scale", ctypes.c_double),
        ("skipped", ctypes.c_int),
        ("page_faults", ctypes.c_int64),
    ]


_ON_STEP = ctypes.CFUNCTYPE(None, ctypes.c_void_p,
                            ctypes.POINTER(_StepRecordStruct))
_ON_WRITE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int,
                             ctypes.c_char_p)


class _EvalRecordStruct(ctypes.Structure):
    _fields_ = [
        ("step", ctypes.c_int64),
        ("loss", ctypes.c_double),
        ("batches", ctypes.c_int64),
        ("samples", ctypes.c_int64),
        ("seconds", ctypes.c_double),
    ]


_ON_EVAL = ctypes.CFUNCTYPE(None, ctypes.c_void_p,
                            ctypes.POINTER(_EvalRecordStruct))
# tsr_train_write_t.
_WRITES = {0: "onnx", 1: "checkpoint"}


class _TrainOptionsStruct(ctypes.Structure):
    _fields_ = [
        ("steps", ctypes.c_int64),
        ("first_step", ctypes.c_int64),
        ("save_onnx", ctypes.c_char_p),
        ("save_every", ctypes.c_int64),
        ("checkpoint_dir", ctypes.c_char_p),
        ("checkpoint_every", ctypes.c_int64),
        ("on_step", _ON_STEP),
        ("on_write", _ON_WRITE),
        ("user", ctypes.c_void_p),
        # Evaluation during the loop (tsr_trainer_run's eval_dataset); the
        # binding leaves it off.
        ("eval_dataset", ctypes.c_void_p),
        ("eval_every", ctypes.c_int64),
        ("eval_batches", ctypes.c_int64),
        ("on_eval", _ON_EVAL),
    ]


_library = None


def _library_path():
    path = os.environ.get("TESSERA_RUNTIME_LIB")
    if path:
        return path
    here = pathlib.Path(__file__).resolve().parent
    installed = here / "_lib" / "libtessera_runtime.so"
    if installed.exists():
        return str(installed)
    root = here.parents[1]
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
        "tsr_artifact_input_placement":
            (status, [p, size, ctypes.POINTER(ctypes.c_int)]),
        "tsr_artifact_output_placement":
            (status, [p, size, ctypes.POINTER(ctypes.c_int)]),
        "tsr_tensor_create_placed": (status, [ctypes.c_int, ctypes.c_int, size,
                                              ctypes.POINTER(ctypes.c_int64),
                                              ctypes.POINTER(p)]),
        "tsr_tensor_copy": (status, [p, p, p]),
        "tsr_tensor_data": (p, [p]),
        "tsr_tensor_byte_size": (size, [p]),
        "tsr_memory_stats": (None, [ctypes.POINTER(size), ctypes.POINTER(size)]),
        "tsr_tensor_memory_stats":
            (None, [ctypes.POINTER(size), ctypes.POINTER(size)]),
        "tsr_memory_reset_peak": (None, []),
        "tsr_memory_arena_stats": (None, [ctypes.POINTER(size)]),
        "tsr_dataset_open_npz":
            (status, [p, ctypes.c_char_p, ctypes.POINTER(p)]),
        "tsr_dataset_open_tokens":
            (status, [p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(p)]),
        "tsr_dataset_destroy": (None, [p]),
        "tsr_trainer_create": (status, [p, ctypes.POINTER(p)]),
        "tsr_trainer_destroy": (None, [p]),
        "tsr_trainer_load_checkpoint":
            (status, [p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64)]),
        "tsr_trainer_run":
            (status, [p, p, ctypes.POINTER(_TrainOptionsStruct)]),
        "tsr_trainer_evaluate":
            (status, [p, p, ctypes.c_int64, ctypes.POINTER(_EvalRecordStruct)]),
        "tsr_comm_init": (status, [ctypes.c_int, p, ctypes.POINTER(p)]),
        "tsr_comm_destroy": (None, [p]),
        "tsr_comm_rank": (ctypes.c_int, [p]),
        "tsr_comm_size": (ctypes.c_int, [p]),
        "tsr_comm_bind_axis": (status, [ctypes.c_int64, p]),
        "tsr_comm_all_reduce": (status, [p, p, p, size, ctypes.c_int,
                                         ctypes.c_int, p]),
        "tsr_mesh_create_for_artifact": (status, [p, p, ctypes.POINTER(p)]),
        "tsr_mesh_destroy": (None, [p]),
        "tsr_mesh_num_axes": (size, [p]),
        "tsr_mesh_axis": (status, [p, size, ctypes.POINTER(ctypes.c_char_p),
                                   ctypes.POINTER(ctypes.c_int64),
                                   ctypes.POINTER(ctypes.c_int64)]),
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
        placement = ctypes.c_int()
        _check(lib.tsr_artifact_input_placement(self._handle, index,
                                                ctypes.byref(placement)))
        if placement.value == _HOST:
            return tensor
        # A device artifact (--target=cuda): the copy lives there.
        try:
            placed = ctypes.c_void_p()
            _check(lib.tsr_tensor_create_placed(placement, code, array.ndim,
                                                shape, ctypes.byref(placed)))
            status = lib.tsr_tensor_copy(placed, tensor, None)
            if status != 0:
                lib.tsr_tensor_destroy(placed)
                _check(status)
            return placed
        finally:
            lib.tsr_tensor_destroy(tensor)

    def _read(self, index, tensor):
        """A NumPy copy of output `index`, wherever its buffer lives."""
        lib = _lib()
        info = self.outputs[index]
        result = np.empty(info.shape, _NUMPY_DTYPES[info.dtype])
        placement = ctypes.c_int()
        _check(lib.tsr_artifact_output_placement(self._handle, index,
                                                 ctypes.byref(placement)))
        if placement.value == _HOST:
            ctypes.memmove(result.ctypes.data, lib.tsr_tensor_data(tensor),
                           lib.tsr_tensor_byte_size(tensor))
            return result
        codes = {name: code for code, name in _DTYPE_NAMES.items()}
        shape = (ctypes.c_int64 * max(result.ndim, 1))(*result.shape)
        host = ctypes.c_void_p()
        _check(lib.tsr_tensor_create(codes[info.dtype], result.ndim, shape,
                                     ctypes.byref(host)))
        try:
            _check(lib.tsr_tensor_copy(host, tensor, None))
            ctypes.memmove(result.ctypes.data, lib.tsr_tensor_data(host),
                           lib.tsr_tensor_byte_size(host))
        finally:
            lib.tsr_tensor_destroy(host)
        return result

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
            return [self._read(index, tensor)
                    for index, tensor in enumerate(outputs)]
        finally:
            for tensor in tensors:
                lib.tsr_tensor_destroy(tensor)

    def run(self, inputs):
        """Invokes the artifact once: `inputs` maps each input's name to an
        array (or is a sequence in manifest order); returns a dict from
        each output's name to a new array."""
        if isinstance(inputs, dict):
            names = [info.name for info in self.inputs]
            unknown = sorted(set(inputs) - set(names))
            missing = [name for name in names if name not in inputs]
            if unknown or missing:
                raise TypeError(f"{self.path}: inputs are {names}; "
                                + (f"missing {missing}" if missing else "")
                                + ("; " if missing and unknown else "")
                                + (f"unknown {unknown}" if unknown else ""))
            inputs = [inputs[name] for name in names]
        outputs = self(*inputs)
        return {info.name: value for info, value in zip(self.outputs, outputs)}

    def train(self, data, steps, *, token_dtype="uint16", resume=None,
              save_onnx=None, save_every=0, checkpoint_dir=None,
              checkpoint_every=0, eval_data=None, eval_every=0,
              eval_batches=0, on_step=None, on_write=None, on_eval=None):
        """Trains a "train" artifact with the runtime's training loop.

        data is an .npz file, or else a token stream of token_dtype
        ("uint16" or "uint32"). Training starts from the ONNX model's params,
        or from the checkpoint directory `resume`, and runs until `steps`
        steps have completed. save_onnx, save_every, checkpoint_dir and
        checkpoint_every write as tessera-run's options of the same names.
        With eval_data (a file like `data`; the artifact compiled with
        tessera-compile --eval) the validation loss is computed after every
        eval_every steps (0: only after the last) over eval_batches batches
        (0: every sample once), as tessera-run --eval-data does.
        on_step(StepRecord) is called after every step, on_eval(EvalRecord)
        after every evaluation, on_write(kind, path) after every file
        written (kind "onnx" or "checkpoint"); an exception they raise stops
        nothing but is re-raised once training returns. Returns a TrainLog:
        the StepRecords of the steps run, and the EvalRecords as its
        `evals`; a failure (a nan loss, a missing file) raises TesseraError.
        """
        if not self._handle:
            raise TesseraError(f"{self.path}: the artifact is closed")
        lib = _lib()
        records, raised = TrainLog(), []

        def eval_callback(_, raw):
            r = raw.contents
            record = EvalRecord(r.step, r.loss, r.batches, r.samples,
                                r.seconds)
            records.evals.append(record)
            if on_eval and not raised:
                try:
                    on_eval(record)
                except BaseException as error:
                    raised.append(error)

        def step_callback(_, raw):
            r = raw.contents
            record = StepRecord(r.step, r.steps, r.loss, r.seconds,
                                r.items_per_second, r.unit.decode(),
                                r.loss_scale, bool(r.skipped), r.page_faults)
            records.append(record)
            if on_step and not raised:
                try:
                    on_step(record)
                except BaseException as error:
                    raised.append(error)

        def write_callback(_, kind, path):
            if on_write and not raised:
                try:
                    on_write(_WRITES[kind], os.fsdecode(path))
                except BaseException as error:
                    raised.append(error)

        def encode(path):
            return None if path is None else os.fsencode(path)

        def open_dataset(path, out):
            if str(path).endswith(".npz"):
                _check(lib.tsr_dataset_open_npz(
                    self._handle, os.fsencode(path), ctypes.byref(out)))
                return
            code = {"uint16": 4, "uint32": 12}.get(token_dtype)
            if code is None:
                raise ValueError(f"token_dtype {token_dtype!r}: expected "
                                 "'uint16' or 'uint32'")
            _check(lib.tsr_dataset_open_tokens(
                self._handle, os.fsencode(path), code, ctypes.byref(out)))

        dataset, trainer = ctypes.c_void_p(), ctypes.c_void_p()
        evaluation = ctypes.c_void_p()
        try:
            open_dataset(data, dataset)
            if eval_data is not None:
                open_dataset(eval_data, evaluation)
            _check(lib.tsr_trainer_create(self._handle, ctypes.byref(trainer)))
            done = ctypes.c_int64(0)
            if resume is not None:
                _check(lib.tsr_trainer_load_checkpoint(
                    trainer, os.fsencode(resume), ctypes.byref(done)))
            options = _TrainOptionsStruct(
                steps=steps, first_step=done.value,
                save_onnx=encode(save_onnx), save_every=save_every,
                checkpoint_dir=encode(checkpoint_dir),
                checkpoint_every=checkpoint_every,
                on_step=_ON_STEP(step_callback),
                on_write=_ON_WRITE(write_callback),
                eval_dataset=evaluation if eval_data is not None else None,
                eval_every=eval_every, eval_batches=eval_batches,
                on_eval=_ON_EVAL(eval_callback))
            status = lib.tsr_trainer_run(trainer, dataset,
                                         ctypes.byref(options))
            if raised:
                raise raised[0]
            _check(status)
        finally:
            lib.tsr_trainer_destroy(trainer)
            lib.tsr_dataset_destroy(dataset)
            lib.tsr_dataset_destroy(evaluation)
        return records


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


def arena_bytes():
    """Bytes of the arena the runtime serves compiled code's blocks from
    after each program's first call (0 before any was planned)."""
    value = ctypes.c_size_t()
    _lib().tsr_memory_arena_stats(ctypes.byref(value))
    return value.value


def reset_memory_peak():
    """Sets both peaks to the current values."""
    _lib().tsr_memory_reset_peak()


class Communicator:
    """An MPI communicator of the runtime (tsr_comm_t): the world of the
    processes mpirun or srun started."""

    def __init__(self, handle):
        self._handle = handle

    @classmethod
    def world(cls):
        handle = ctypes.c_void_p()
        _check(_lib().tsr_comm_init(1, None, ctypes.byref(handle)))  # MPI
        return cls(handle)

    @property
    def rank(self):
        return _lib().tsr_comm_rank(self._handle)

    @property
    def size(self):
        return _lib().tsr_comm_size(self._handle)

    def mesh(self, artifact):
        """The device mesh of `artifact` on this communicator (the world):
        a communicator bound to every group of axes its collectives use
        (tsr_mesh_create_for_artifact). Close it before the world."""
        handle = ctypes.c_void_p()
        _check(_lib().tsr_mesh_create_for_artifact(
            self._handle, artifact._handle, ctypes.byref(handle)))
        return Mesh(handle)

    def bind_axis(self, mask):
        """Runs the compiled collectives of the group of mesh axes `mask`
        (bit i for axis i of the manifest's mesh) on this communicator."""
        _check(_lib().tsr_comm_bind_axis(mask, self._handle))

    def all_reduce_sum(self, array):
        """The elementwise sum of `array` over the ranks (a new array)."""
        array = np.ascontiguousarray(array)
        code = _CODES.get(array.dtype)
        if code is None:
            raise TypeError(f"NumPy dtype {array.dtype} has no runtime dtype")
        out = np.empty_like(array)
        _check(_lib().tsr_comm_all_reduce(
            self._handle, array.ctypes.data, out.ctypes.data, array.size,
            code, 0, None))  # TSR_REDUCE_SUM
        return out

    def close(self):
        """Destroys the communicator (the world one last: MPI finalizes)."""
        if self._handle:
            _lib().tsr_comm_destroy(self._handle)
            self._handle = None


class Mesh:
    """A device mesh with its group communicators bound (Comm.h). `axes`
    maps every axis name to (size, this rank's coordinate)."""

    def __init__(self, handle):
        self._handle = handle
        lib = _lib()
        self.axes = {}
        for i in range(lib.tsr_mesh_num_axes(handle)):
            name = ctypes.c_char_p()
            axis_size, coordinate = ctypes.c_int64(), ctypes.c_int64()
            _check(lib.tsr_mesh_axis(handle, i, ctypes.byref(name),
                                     ctypes.byref(axis_size),
                                     ctypes.byref(coordinate)))
            self.axes[name.value.decode()] = (axis_size.value,
                                              coordinate.value)

    def close(self):
        """Unbinds the groups and destroys their communicators."""
        if self._handle:
            _lib().tsr_mesh_destroy(self._handle)
            self._handle = None
