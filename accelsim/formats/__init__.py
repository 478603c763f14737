"""Sparsity formats: the interface (``base``), the registry (``registry``) and one module per format.

A format family is registered here, one line each; everything else finds it through the registry.
"""

from accelsim.formats.base import CompressedOperand, SparsityFormat
from accelsim.formats.channel import ChannelPruning
from accelsim.formats.nm import Pattern
from accelsim.formats.paired import PairedPattern
from accelsim.formats.registry import (
    UnknownFormatError,
    best_container,
    contains,
    families,
    family,
    normalize_format,
    parse_format,
    parse_spelling,
    register,
    registered,
    unregister,
)
from accelsim.formats.unstructured import Unstructured

register(Pattern)  # N:M, e.g. "2:4"
register(PairedPattern)  # pair-wise N:M, e.g. "4:8-paired" (int4 / fp4 tensor cores)
register(ChannelPruning)  # whole output rows pruned, e.g. "channel:50%": a smaller dense GEMM
register(Unstructured)  # any zeros, e.g. "unstructured:90%": how it runs is the hardware's (core.sparse.formats)

__all__ = ["CompressedOperand", "SparsityFormat", "UnknownFormatError", "best_container", "contains", "families",
           "family", "normalize_format", "parse_format", "parse_spelling", "register", "registered", "unregister"]
