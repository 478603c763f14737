"""accelsim: a cycle-approximate accelerator simulator for dense and N:M structured-sparse workloads."""

__version__ = "0.1.0"

from accelsim.engine import simulate  # noqa: E402
from accelsim.errors import AccelsimError, ConfigError, InfeasibleError  # noqa: E402
from accelsim.hardware.model import Hardware, load_hardware  # noqa: E402
from accelsim.lowering import Kernel, lower  # noqa: E402
from accelsim.simulation import run  # noqa: E402
from accelsim.workloads.model import Workload, load_workload  # noqa: E402

__all__ = ["__version__", "AccelsimError", "ConfigError", "InfeasibleError", "Hardware", "Kernel", "Workload",
           "load_hardware", "load_workload", "lower", "run", "simulate"]
