"""accelsim: a cycle-approximate accelerator simulator for dense and N:M structured-sparse workloads.

The Python API (docs/python-api.md)::

    import accelsim
    hw = accelsim.load_hardware(accelsim.examples.hardware("a100-like"))
    model = accelsim.load_workload(accelsim.examples.workload("bert-base"), params={"batch": 1, "seq": 128})
    result = accelsim.run(model, hw, "2:4")
    result.totals["latency_us"]
"""

from accelsim import examples, sweep
from accelsim.engine import simulate
from accelsim.errors import AccelsimError, ConfigError, InfeasibleError
from accelsim.hardware.model import Hardware, hardware_from_dict, load_hardware
from accelsim.lowering import Kernel, lower
from accelsim.results import KernelResult, RunResult
from accelsim.simulation import run
from accelsim.tables import to_dataframe
from accelsim.version import __version__
from accelsim.workloads.model import Workload, load_workload, workload_from_dict

__all__ = [
    "__version__",
    # configs
    "Hardware", "Workload", "load_hardware", "load_workload", "hardware_from_dict", "workload_from_dict",
    "examples",
    # simulation and results
    "run", "RunResult", "KernelResult", "to_dataframe",
    "lower", "Kernel", "simulate",
    # sweeps
    "sweep",
    # errors
    "AccelsimError", "ConfigError", "InfeasibleError",
]
