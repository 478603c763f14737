"""Hardware: validated config values (``model``), and the compute kinds (``kinds``), registered here one line each.

A kind registers before :mod:`accelsim.hardware.model` builds its ``core.compute`` union from the registry.
"""

from accelsim.hardware import kinds
from accelsim.hardware.systolic import SYSTOLIC
from accelsim.hardware.tensor_core import TENSOR_CORE

kinds.register(SYSTOLIC)  # kind: systolic
kinds.register(TENSOR_CORE)  # kind: tensor_core
