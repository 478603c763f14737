"""The sparsity-format interface: what a format compresses and what that costs, for every caller.

A *format* is a frozen value (e.g. the N:M pattern 2:4); its class is the format's family, the
unit the registry (:mod:`accelsim.formats.registry`) holds and parses spellings with. Callers
(lowering, the engine's inputs, footprints, hardware validation, the functional check) use only
this interface, never a family's own fields.

The timing engine runs numba kernels over numbers, not objects: a format hands it ``keep`` and
``group`` (``keep`` values kept per ``group`` positions along the reduction k; decode work is
one group per ``group`` dense positions) and its metadata bits per kept value. A format whose
structure those numbers cannot express brings engine inputs of its own (see docs/extending.md).
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

import numpy as np

from accelsim.textsafe import short_repr

# The GEMM operands C[m x n] = A[m x k] . B[k x n] a format may compress.
OPERANDS = ("A",)


class CompressedOperand(Protocol):
    """A compressed operand built by :meth:`SparsityFormat.compress` (functional path)."""

    @property
    def k(self) -> int:
        """Dense reduction length."""
        ...

    @property
    def k_padded(self) -> int:
        """k after padding to the format's group."""
        ...

    @property
    def metadata_bits(self) -> int:
        """Metadata bits per kept value."""
        ...

    @property
    def rows(self) -> int: ...

    @property
    def kept(self) -> int: ...

    @property
    def metadata_bytes(self) -> int: ...

    @property
    def padding(self) -> dict[str, list[int]]: ...

    def gather(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        """``(values, indices, keep, group)`` for the engine's functional kernel: value ``p`` of row
        ``r`` multiplies row ``(p // keep) * group + indices[r, p]`` of B (rows at or past B's end
        are padding)."""
        ...


class SparsityFormat(ABC):
    """One sparsity format (a frozen, hashable value); its class is the family the registry holds."""

    key: ClassVar[str]  # registry key of the family, e.g. "nm"
    title: ClassVar[str]  # how users call the family, e.g. "N:M"
    example: ClassVar[str]  # a spelling, e.g. "2:4": error messages show it
    operand: ClassVar[str] = "A"  # which GEMM operand it compresses (A: the weight); one of OPERANDS
    # A family spelled by a regular expression sets ``spelling`` (the whole text; groups are its fields) and
    # ``spelling_hint`` (what the error on a mismatch expects, e.g. 'a pattern like "2:4" (N:M)'); ``claim``
    # when it claims more texts than it parses (so that its own errors name them). Others override claims.
    spelling: ClassVar[re.Pattern[str] | None] = None
    claim: ClassVar[re.Pattern[str] | None] = None
    spelling_hint: ClassVar[str] = ""

    # -- spelling ----------------------------------------------------------------------------
    @classmethod
    def claims(cls, text: str) -> bool:
        """Whether ``text`` (stripped, not 'dense') is written in this family's spelling (default: ``claim``,
        else ``spelling``, matches it)."""
        pattern = cls.claim or cls.spelling
        if pattern is None:
            raise NotImplementedError(f"{cls.__name__} sets neither spelling nor claim: it must define claims()")
        return pattern.match(text) is not None

    @classmethod
    def match_spelling(cls, text: str) -> re.Match[str]:
        """``spelling`` matched against ``text`` stripped; ValueError 'expected <spelling_hint>, got <text>'."""
        match = cls.spelling.match(text.strip()) if cls.spelling is not None else None
        if match is None:
            raise ValueError(f"expected {cls.spelling_hint}, got {short_repr(text)}")
        return match

    @classmethod
    @abstractmethod
    def parse(cls, text: str) -> SparsityFormat:
        """The format ``text`` spells (claimed by :meth:`claims` once stripped); ValueError with a hint
        (naming ``text`` as the user wrote it) when invalid.

        May return a dense-equivalent format (``is_dense``): callers treat that as dense.
        """

    @classmethod
    def at_sparsity(cls, sparsity: float) -> SparsityFormat | None:
        """This family's format with exactly ``sparsity`` (share of zeros, 0..1) as users write it, or None
        when the family has no format at that level ("which pattern pays" compares families with it)."""
        return None

    @classmethod
    def number_hint(cls, value: int) -> str | None:
        """A hint for a spelling YAML read as the number ``value`` (e.g. an unquoted 2:4), or None."""
        return None

    @abstractmethod
    def __str__(self) -> str:
        """The canonical spelling: parsing it gives back an equal format."""

    # -- what it keeps -----------------------------------------------------------------------
    @property
    @abstractmethod
    def keep(self) -> int:
        """Values kept per group along k (engine input)."""

    @property
    @abstractmethod
    def group(self) -> int:
        """Dense positions per group along k (engine input); k is padded to a multiple of it."""

    @property
    def is_dense(self) -> bool:
        """Keeps every value: runs as dense."""
        return self.keep == self.group

    @property
    def density(self) -> float:
        """Share of A's values kept."""
        return self.keep / self.group

    @property
    @abstractmethod
    def default_metadata_bits(self) -> int:
        """Metadata bits per kept value when the hardware does not say (``metadata_bits_per_value``)."""

    @property
    def dense_speedup(self) -> float:
        """Ideal MAC-rate gain of a datapath that skips the zeros: dense work / executed work."""
        return self.group / self.keep

    def k_padded(self, k: int) -> int:
        """Reduction length after zero-padding to whole groups."""
        return -(-k // self.group) * self.group

    def k_compressed(self, k: int) -> int:
        """Reduction length A keeps after compression (the dense-equivalent work shrinks to it)."""
        return -(-k // self.group) * self.keep

    def kept_values(self, rows: int, k: int) -> int:
        """Values of a ``rows x k`` A stored after compression (default: ``rows`` x ``k_compressed(k)``)."""
        return rows * self.k_compressed(k)

    def value_bytes(self, rows: int, k: int, dtype_bytes: float) -> int:
        """Bytes of A's kept values: whole bytes, rounded up for sub-byte element types (0.5 for fp4)."""
        return element_bytes(self.kept_values(rows, k), dtype_bytes)

    def metadata_bytes(self, rows: int, k: int, bits: int | None = None) -> float:
        """Bytes of A's metadata at ``bits`` per kept value (default: ``default_metadata_bits``)."""
        b = self.default_metadata_bits if bits is None else bits
        return rows * self.k_compressed(k) * b / 8

    def decode_groups(self, rows: int, k: int) -> int:
        """Metadata groups the decode stage handles for all of A."""
        return rows * -(-k // self.group)

    # -- which formats a datapath runs --------------------------------------------------------
    @abstractmethod
    def contains(self, requested: SparsityFormat) -> bool:
        """True when hardware running ``self`` natively can run every mask valid for ``requested``."""

    def preference(self) -> tuple[Any, ...]:
        """Sort key among formats that contain a request: the smallest runs it (least density first)."""
        return (self.density, self.group)

    # -- formats that are not native patterns of the sparse datapath ---------------------------
    # A native format (N:M) is listed under core.sparse.patterns and runs on the sparse datapath with
    # ``keep`` / ``group`` / metadata bits. A format with ``native = False`` (channel, unstructured) says
    # itself how it lowers: ``kernel_fields`` gives the Kernel's extra engine inputs, from the part's
    # entry for the family under core.sparse.formats (``support``: None when the part lists none; a
    # format with ``needs_support`` then falls back, format_unsupported).
    native: ClassVar[bool] = True
    needs_support: ClassVar[bool] = True
    default_support: ClassVar[dict[str, Any] | None] = None  # the entry a what-if adds to a part that lists none

    def kernel_fields(self, m: int, k: int, support: Any | None) -> dict[str, Any]:
        """Kernel fields (beyond keep/group/metadata bits) of a non-native format on an ``m`` x ``k`` weight,
        run as ``support`` (the hardware's core.sparse.formats entry for this family, or None)."""
        raise NotImplementedError(f"{type(self).__name__} is a native format: lowering uses keep/group")

    def compress_as(self, a_pruned: np.ndarray, mask: np.ndarray | None, metadata_bits: int | None,
                    support: Any | None) -> CompressedOperand:
        """The compressed form the hardware entry ``support`` runs (a non-native format's index encoding);
        default: :meth:`compress`."""
        return self.compress(a_pruned, mask, metadata_bits)

    # -- functional path ---------------------------------------------------------------------
    @abstractmethod
    def prune(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(pruned, mask)``: ``a`` pruned by magnitude to a mask valid for this format."""

    @property
    def pruning(self) -> str:
        """What :meth:`prune` keeps, in words, for results that report a pruning error (a family says its rule;
        this default only names the format)."""
        return f"{self}: magnitude pruning as the {self.title} family prunes"

    @abstractmethod
    def compress(self, a_pruned: np.ndarray, mask: np.ndarray | None,
                 metadata_bits: int | None = None) -> CompressedOperand:
        """The compressed form of ``a_pruned * mask`` (FunctionalError when the mask is not valid)."""


class GroupedFormat(SparsityFormat):
    """A family keeping ``n`` values per group of ``m`` along k (N:M, pair-wise N:M, V:N:M): ``keep`` is n,
    ``group`` is m. Subclasses are frozen dataclasses with ``n`` and ``m`` fields."""

    n: int
    m: int

    @property
    def keep(self) -> int:
        return self.n

    @property
    def group(self) -> int:
        return self.m


def element_bytes(count: int, dtype_bytes: float) -> int:
    """Bytes of ``count`` elements of ``dtype_bytes`` each: whole bytes, rounded up for sub-byte types."""
    if isinstance(dtype_bytes, int):
        return count * dtype_bytes
    return -(-count * round(dtype_bytes * 8) // 8)


def bits_to_index(m: int) -> int:
    """Bits that index a position in a group of ``m``: ceil(log2 m), 0 for m == 1."""
    return math.ceil(math.log2(m)) if m > 1 else 0
