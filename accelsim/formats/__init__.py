"""Sparsity formats: the interface (``base``), the registry (``registry``) and one module per format.

A format family is registered here, one line each; everything else finds it through the registry.
"""

from accelsim.formats.base import CompressedOperand, SparsityFormat
from accelsim.formats.block import BlockSparsity
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
from accelsim.formats.vnm import VnmPattern

register(Pattern)  # N:M, e.g. "2:4"
register(PairedPattern)  # pair-wise N:M, e.g. "4:8-paired" (int4 / fp4 tensor cores)
register(VnmPattern)  # V:N:M (VENOM), e.g. "64:2:8": 2:4 tensor cores on 4 gathered columns of every M
register(BlockSparsity)  # block sparsity, e.g. "block32x32:75%": dense tiles over the nonzero blocks
register(ChannelPruning)  # whole output rows pruned, e.g. "channel:50%": a smaller dense GEMM
register(Unstructured)  # any zeros, e.g. "unstructured:90%": how it runs is the hardware's (core.sparse.formats)

__all__ = ["CompressedOperand", "SparsityFormat", "UnknownFormatError", "best_container", "contains", "families",
           "family", "normalize_format", "parse_format", "parse_spelling", "register", "registered", "unregister"]
