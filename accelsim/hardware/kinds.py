"""The registry of compute kinds: what ``core.compute.kind`` may be, and what each kind answers.

A kind is one module (e.g. :mod:`accelsim.hardware.systolic`) holding its pydantic schema (a
``Strict`` model whose ``kind`` field is ``Literal[<name>]``) and a :class:`ComputeKind` that says,
for the rest of accelsim: its peak MAC rate, which engine simulation times it, the config fields
that are calibrated, its trace labels and the rules that span config sections. Kinds register
in :mod:`accelsim.hardware` (one line each); the hardware model's ``core.compute`` union is built
from the registry, and rebuilt when a kind registers later.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Union

from pydantic import BaseModel, Field

from accelsim.errors import AccelsimError
from accelsim.textsafe import short_repr

if TYPE_CHECKING:
    from accelsim.hardware.model import Hardware


class UnknownKindError(AccelsimError):
    """A compute kind that no module registered."""


# A per-tile trace arg: its name and the tile-record column (``results.TILE_DTYPE``) it shows, or
# the columns whose values it lists, e.g. ("fold", ("fold_r", "fold_c")).
TileArg = tuple[str, str | tuple[str, ...]]


@dataclass(frozen=True)
class TraceLabels:
    """How traces and timelines name a kind's parts."""

    unit: str  # one core, e.g. "core" or "SM"
    tile_args: tuple[TileArg, ...]  # per-tile args a trace event carries, e.g. (("chunk", "chunk"),)
    layer_tiling: tuple[str, ...] = ()  # keys of a result's ``tiling`` a layer event shows
    waves: bool = False  # tiles are CTAs issued in waves over every slot: events name the CTA and its
    # wave (else the tile and its batch index)

    @property
    def tile_arg_names(self) -> tuple[str, ...]:
        """The names of the per-tile args, in order."""
        return tuple(name for name, _ in self.tile_args)


# the default: tiles of a fold-by-fold (systolic) simulation
FOLD_TILE_ARGS: tuple[TileArg, ...] = (("fold", ("fold_r", "fold_c")), ("chunk", "chunk"))


class ComputeKind:
    """What a compute kind answers; a kind's module subclasses it and registers an instance."""

    name: ClassVar[str]  # the ``kind:`` tag, equal to the schema's Literal
    schema: ClassVar[type[BaseModel]]  # the pydantic model of ``core.compute``
    simulation: ClassVar[str]  # the engine simulation that times it (accelsim.engine.SIMULATIONS)
    calibrated_fields: ClassVar[tuple[str, ...]] = ()  # dotted config paths marked CALIBRATED
    trace: ClassVar[TraceLabels] = TraceLabels("core", FOLD_TILE_ARGS)

    def peak_macs_per_cycle(self, compute: Any, dtype: str) -> float:
        """Dense MACs per cycle of one core for ``dtype`` (0 when it has no rate for it)."""
        raise NotImplementedError

    def slots_per_core(self, compute: Any) -> int:
        """Tiles (CTAs) a core runs at once."""
        return 1

    def sparse_efficiency_ratio(self, compute: Any) -> float:
        """Sustained rate of the sparse kernels relative to the dense ones (1 when not modelled)."""
        return 1.0

    def sparse_at_dense_efficiency(self, data: dict[str, Any]) -> dict[str, Any]:
        """``core.compute`` config data changed so that the sparse kernels sustain the dense kernels'
        efficiency (ratio 1; what-if analyses). Unchanged where the ratio is not modelled."""
        return data

    def check(self, hw: Hardware) -> None:
        """Rules that span config sections (raise ``configio.FieldError``); none by default."""


_KINDS: dict[str, ComputeKind] = {}
_ON_CHANGE: list[Callable[[], None]] = []


def register(kind: ComputeKind) -> ComputeKind:
    """Add a compute kind (its name must be new and equal its schema's ``kind`` Literal)."""
    if kind.name in _KINDS:
        raise ValueError(f"compute kind {kind.name!r} is already registered")
    tag = kind.schema.model_fields.get("kind")
    if tag is None or getattr(tag.annotation, "__args__", None) != (kind.name,):
        raise ValueError(f"compute kind {kind.name!r}: its schema needs the field kind: Literal[{kind.name!r}]")
    _KINDS[kind.name] = kind
    _changed()
    return kind


def unregister(name: str) -> None:
    """Remove a registered kind (tests that register a toy one)."""
    compute_kind(name)
    del _KINDS[name]
    _changed()


@contextmanager
def registered(kind: ComputeKind) -> Iterator[ComputeKind]:
    """Register ``kind`` for the duration of a ``with`` block."""
    register(kind)
    try:
        yield kind
    finally:
        unregister(kind.name)


def on_change(hook: Callable[[], None]) -> None:
    """Call ``hook`` whenever a kind registers or leaves (the hardware model rebuilds its union)."""
    _ON_CHANGE.append(hook)


def _changed() -> None:
    for hook in _ON_CHANGE:
        hook()


def compute_kind(name: str) -> ComputeKind:
    """The kind registered as ``name``; UnknownKindError naming it otherwise."""
    try:
        return _KINDS[name]
    except KeyError:
        raise UnknownKindError(f"unknown compute kind {short_repr(name)}; registered: "
                               f"{', '.join(_KINDS) or 'none'}") from None


def kinds() -> tuple[ComputeKind, ...]:
    """Registered kinds, in registration order."""
    return tuple(_KINDS.values())


def kind_of(hw: Hardware) -> ComputeKind:
    """The kind of ``hw``'s compute."""
    return compute_kind(hw.core.compute.kind)


def peak_macs_per_cycle(hw: Hardware, dtype: str) -> float:
    """Dense MACs per cycle of the whole part for ``dtype`` (its compute kind's rate per core x cores)."""
    return kind_of(hw).peak_macs_per_cycle(hw.core.compute, dtype) * hw.cores


def compute_union() -> Any:
    """The ``core.compute`` annotation: the registered schemas, told apart by ``kind``."""
    schemas = tuple(k.schema for k in _KINDS.values())
    if not schemas:
        raise UnknownKindError("no compute kind is registered")
    if len(schemas) == 1:
        return schemas[0]
    return Annotated[Union[schemas], Field(discriminator="kind")]  # noqa: UP007 (a runtime tuple of types)
