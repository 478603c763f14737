"""Import an ONNX model as an accelsim workload (shapes only: weight data is never loaded).

:func:`import_onnx` reads the graph (a regular file of at most 2 GiB; external weight data is never read),
fixes symbolic input dims (the leading one is the batch: ``params["batch"]``, default 1; any other by a
parameter of the same name), runs ONNX shape inference and maps every node to a workload layer in graph
order. It returns an :class:`OnnxImport` (the workload dict and its notes); :func:`workload_yaml` writes it as YAML. The
command line (``accelsim import-onnx``) lives in :mod:`accelsim.cli.import_onnx`. ``onnx`` is optional:
it is imported only when a model is read.

Modules: :mod:`.reading` (the file, symbolic dims, dtype), :mod:`.graph` (shapes and constants known so
far), :mod:`.ops` (what each op becomes), :mod:`.optypes` (the op tables), :mod:`.importer` (the walk),
:mod:`.writing` (the YAML).
"""

from accelsim.workloads.onnx.importer import OnnxImport, import_onnx
from accelsim.workloads.onnx.reading import MAX_DIM, OnnxImportError
from accelsim.workloads.onnx.writing import workload_yaml

__all__ = ["MAX_DIM", "OnnxImport", "OnnxImportError", "import_onnx", "workload_yaml"]
