"""accelsim: a cycle-approximate accelerator simulator for dense and N:M structured-sparse workloads.

The Python API (docs/python-api.md)::

    import accelsim
    hw = accelsim.load_hardware(accelsim.examples.hardware("a100-like"))
    model = accelsim.load_workload(accelsim.examples.workload("bert-base"), params={"batch": 1, "seq": 128})
    result = accelsim.run(model, hw, "2:4")
    result.totals["latency_us"]
"""

# Written here only (pyproject.toml reads it); set before the imports below, which read it back.
__version__ = "0.1.0"

from accelsim import examples, sweep  # noqa: E402
from accelsim.engine import simulate  # noqa: E402
from accelsim.errors import AccelsimError, ConfigError, InfeasibleError  # noqa: E402
from accelsim.hardware.model import Hardware, hardware_from_dict, load_hardware  # noqa: E402
from accelsim.lowering import Kernel, lower  # noqa: E402
from accelsim.results import KernelResult, RunResult  # noqa: E402
from accelsim.simulation import run  # noqa: E402
from accelsim.tables import to_dataframe  # noqa: E402
from accelsim.workloads.model import Workload, load_workload, workload_from_dict  # noqa: E402

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
