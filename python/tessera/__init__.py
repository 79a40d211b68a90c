"""Tessera from Python.

``tessera.compile(model, **options)`` compiles an ONNX model with
tessera-compile and returns the artifact; ``Artifact.run(inputs)`` invokes
it on NumPy arrays and ``Artifact.train(data, steps, ...)`` trains a
"train" artifact in-process with the runtime's training loop
(``tessera.runtime``, over the runtime's C API). ``tessera.plot``
(``python -m tessera.plot``) draws the loss curves of training logs as SVG.
"""

from .compiler import CompileError, compile  # noqa: A004
from .runtime import Artifact, EvalRecord, StepRecord, TesseraError, TrainLog

__all__ = ["Artifact", "CompileError", "EvalRecord", "StepRecord",
           "TesseraError", "TrainLog", "compile"]
__version__ = "0.1.0"
