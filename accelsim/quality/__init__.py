"""Published quality of sparse models: a sourced registry (one CSV per paper or model card) and look-ups.

accelsim does not train models; what pruning to a hardware-friendly format costs in a task metric
comes from the literature. Each entry names its source (paper table or model card section) and says
whether its figures are published as printed or derived from published ones (and how).
"""

from accelsim.quality.registry import (
    COLUMNS,
    DATA,
    KINDS,
    QualityEntry,
    entry,
    find_entries,
    load_registry,
    normalize_name,
    read_registry,
    read_source,
)

__all__ = ["COLUMNS", "DATA", "KINDS", "QualityEntry", "entry", "find_entries", "load_registry", "normalize_name",
           "read_registry", "read_source"]
