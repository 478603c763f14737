"""Where each number of a hardware config comes from: a spec sheet, derived, family-calibrated, or an estimate.

A config (and each family file it extends) may carry a ``provenance:`` section::

    provenance:
      sources:                      # keys cited below -> the document (title, address)
        h2: "glennklockwood.com/garden/processors/h100 (quotes the NVIDIA H100 datasheet)"
      fields:                       # dotted config path -> where the value at or below it comes from
        cores: {kind: spec, source: h2}
        core.compute.macs_per_cycle.fp16: {kind: derived, source: h2, how: "989.4 TFLOPS / (2 x 132 x 1.83 GHz)"}
        energy: {kind: estimate, how: "a100-like's method scaled by TDP and process"}
      tensor_tflops:                # published peak tensor rates per dtype, dense and 2:4 sparse
        fp16: {dense: 989.4, sparse: 1978.9, source: h2}
      calibrated:                   # a family's calibrated constants that parts convert (not config fields)
        launch_overhead_us.dense: {value: 3.865, how: "..."}

Kinds: ``spec`` (a public spec sheet or whitepaper: ``source`` required), ``derived`` (arithmetic on
spec values: ``how`` required), ``family-calibrated`` (fitted once per family on measured data, or
carried over until refitted: ``how`` required) and ``estimate`` (a typical figure or a modelling
choice: ``how`` or ``source`` required).

A value's entry is the nearest one at or above its path **in the file that set the value**: a
value inherited from a family is accounted for by the family's entry, a value a config overrides
needs the config's own. When the config itself has a ``provenance`` section, every number of the
merged config must be accounted for (a list of numbers, e.g. a tile, is one value). Entries that
cover no number of their own file, and source keys that no file defines, are errors.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import Field, model_validator

from accelsim.config import schema as configio
from accelsim.errors import ConfigError
from accelsim.hardware.base import DtypeName, PosFloat, Strict
from accelsim.hardware.families import PROVENANCE_KEY, HardwareData, leaf_paths

if TYPE_CHECKING:
    from accelsim.hardware.model import Hardware

KINDS = ("spec", "derived", "family-calibrated", "estimate")
Kind = Literal["spec", "derived", "family-calibrated", "estimate"]
PEAK_TOLERANCE = 0.02  # published tensor TFLOPS vs cores x macs_per_cycle x 2 x clock


class Entry(Strict):
    """Where one value (or every value below a path) comes from."""

    kind: Kind = Field(description="spec, derived, family-calibrated or estimate.")
    source: str = Field("", description="Source keys (from 'sources'), comma-separated.")
    how: str = Field("", description="The arithmetic (derived), the fit (family-calibrated) or the basis (estimate).")

    @model_validator(mode="after")
    def _says_enough(self) -> Entry:
        if self.kind == "spec" and not self.source.strip():
            raise configio.FieldError(("source",), "a spec value names its source (a key of provenance.sources)")
        if self.kind in ("derived", "family-calibrated") and not self.how.strip():
            raise configio.FieldError(("how",), f"a {self.kind} value says how it was obtained")
        if self.kind == "estimate" and not (self.how.strip() or self.source.strip()):
            raise configio.FieldError(("how",), "an estimate says what it rests on (how or source)")
        return self

    def source_keys(self) -> list[str]:
        return [k.strip() for k in self.source.split(",") if k.strip()]


class PublishedRate(Strict):
    """A published peak tensor rate for one dtype, TFLOPS (TOPS for integers)."""

    dense: PosFloat
    sparse: PosFloat | None = Field(None, description="With 2:4 (or the dtype's) structured sparsity.")
    source: str = Field(min_length=1, description="Source keys, comma-separated.")
    note: str = ""

    def source_keys(self) -> list[str]:
        return [k.strip() for k in self.source.split(",") if k.strip()]


class Constant(Strict):
    """A family's calibrated constant that its parts convert into config values (e.g. microseconds)."""

    value: PosFloat
    how: str = Field(min_length=1)


class Section(Strict):
    """The ``provenance`` section of one file."""

    sources: dict[str, str] = Field(default_factory=dict)
    fields: dict[str, Entry] = Field(default_factory=dict)
    tensor_tflops: dict[str, PublishedRate] = Field(default_factory=dict)
    calibrated: dict[str, Constant] = Field(default_factory=dict)


class _File(Strict):
    provenance: Section


@dataclass(frozen=True)
class Resolved:
    """The provenance of one number of the merged config."""

    path: str
    value: Any
    kind: str
    source: str
    how: str
    file: str  # the file that set the value (and holds the entry)
    entry: str  # the entry's path (the value's own, or a path above it)


@dataclass(frozen=True)
class Provenance:
    """Every number of a merged config with its kind and source, plus the published rates."""

    values: tuple[Resolved, ...]
    unaccounted: tuple[str, ...]  # numbers without an entry (empty when complete)
    sources: dict[str, str]
    tensor_tflops: dict[str, PublishedRate]
    calibrated: dict[str, Constant]
    declared: bool  # the config itself has a provenance section (then it must be complete)

    def counts(self) -> dict[str, int]:
        c = Counter(v.kind for v in self.values)
        return {k: c[k] for k in KINDS if c[k]}

    def of(self, path: str) -> Resolved | None:
        return next((v for v in self.values if v.path == path), None)

    def summary(self) -> str:
        if not self.values and not self.declared:
            return "no provenance"
        parts = [f"{n} {k}" for k, n in self.counts().items()]
        if self.unaccounted:
            parts.append(f"{len(self.unaccounted)} without an entry")
        return "provenance: " + ", ".join(parts)


def is_number(value: Any) -> bool:
    """An int or float (not a bool), or a non-empty list whose items are all numbers (a tile, a list of tiles)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, list) and bool(value) and all(is_number(v) for v in value)


def numbers(data: Any) -> dict[str, Any]:
    """Dotted path -> value of every number in ``data`` (lists of numbers are one value)."""
    return {path: value for path, value in leaf_paths(data) if is_number(value)}


def _covering(path: str, entries: dict[str, Entry]) -> str | None:
    """The nearest entry path at or above ``path``."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in entries:
            return key
    return None


def provenance(hd: HardwareData, family: bool = False) -> Provenance:
    """Validate the provenance sections of a merged config; ConfigError naming file and key on a problem.

    Completeness is required when the config (or, with ``family``, the family file) declares a section.
    """
    sections: dict[str, Section] = {}
    for layer in hd.layers:
        if layer.provenance is not None:
            sections[layer.label] = configio.validate(_File, {PROVENANCE_KEY: layer.provenance}, layer.label).provenance
    sources: dict[str, str] = {}
    published: dict[str, PublishedRate] = {}
    calibrated: dict[str, Constant] = {}
    for layer in reversed(hd.layers):  # child wins
        sec = sections.get(layer.label)
        if sec is not None:
            sources.update(sec.sources)
            published.update(sec.tensor_tflops)
            calibrated.update(sec.calibrated)
    for layer in hd.layers:
        sec = sections.get(layer.label)
        if sec is None:
            continue
        own = numbers(layer.data)
        for path, entry in sec.fields.items():
            if not any(p == path or p.startswith(path + ".") for p in own):
                raise ConfigError(layer.label, f"{PROVENANCE_KEY}.fields.{path}", "no number of this file is at or "
                                  "below this path (an entry accounts for values set in its own file)")
            _check_keys(entry.source_keys(), sources, layer.label, f"{PROVENANCE_KEY}.fields.{path}.source")
        for dtype, rate in sec.tensor_tflops.items():
            _check_keys(rate.source_keys(), sources, layer.label, f"{PROVENANCE_KEY}.tensor_tflops.{dtype}.source")
    values: list[Resolved] = []
    missing: list[tuple[str, str]] = []
    for path, value in numbers(hd.data).items():
        file = hd.origin.get(path, hd.source)
        sec = sections.get(file)
        key = _covering(path, sec.fields) if sec is not None else None
        if sec is None or key is None:
            missing.append((path, file))
            continue
        e = sec.fields[key]
        values.append(Resolved(path, value, e.kind, e.source, e.how, file, key))
    declared = hd.layers[0].label in sections
    if declared and missing:
        raise ConfigError.many(hd.source, [(path, f"no provenance entry (spec, derived, family-calibrated or "
                                                  f"estimate) for this value{_in(file, hd.source)}")
                                           for path, file in missing])
    return Provenance(tuple(values), tuple(p for p, _ in missing), sources, published, calibrated, declared)


def _in(file: str, source: str) -> str:
    return "" if file == source else f" (set in {file}: its entry belongs there)"


def _check_keys(keys: list[str], sources: dict[str, str], label: str, where: str) -> None:
    unknown = [k for k in keys if k not in sources]
    if unknown:
        raise ConfigError(label, where, f"source key {unknown[0]!r} is not in provenance.sources of this file or "
                                        "the files it extends")


def peak_problems(hw: Hardware, prov: Provenance) -> list[tuple[str, str]]:
    """(key, problem) for each published tensor rate that cores x macs_per_cycle x 2 x clock misses by > 2 %.

    Dtypes the config simulates must all be published (and the reverse: a published dtype accelsim
    runs needs a rate). The sparse rate is checked against the native pattern that runs the dtype
    (2:4 where it does; fp4 and int4 run 4:8-paired).
    """
    if not prov.tensor_tflops:
        return []
    macs: dict[str, float] = dict(getattr(hw.core.compute, "macs_per_cycle", {}))
    sparse = hw.core.sparse
    out: list[tuple[str, str]] = []
    for dtype in macs:
        if dtype not in prov.tensor_tflops:
            out.append((f"core.compute.macs_per_cycle.{dtype}", f"no published rate for {dtype} in "
                        f"{PROVENANCE_KEY}.tensor_tflops (list the spec sheet's dense and sparse TFLOPS)"))
    simulable = set(get_args(DtypeName))
    for dtype, rate in prov.tensor_tflops.items():
        if dtype not in simulable:
            continue
        if dtype not in macs:
            out.append((f"{PROVENANCE_KEY}.tensor_tflops.{dtype}", f"published, but core.compute.macs_per_cycle "
                        f"has no {dtype} rate: a run in {dtype} would fail"))
            continue
        peak = hw.cores * macs[dtype] * 2 * hw.clock_ghz / 1000.0
        if abs(peak / rate.dense - 1) > PEAK_TOLERANCE:
            out.append((f"core.compute.macs_per_cycle.{dtype}", f"{hw.cores} cores x {macs[dtype]:g} x 2 x "
                        f"{hw.clock_ghz:g} GHz = {peak:.1f} TFLOPS, published {rate.dense:g} "
                        f"({PROVENANCE_KEY}.tensor_tflops.{dtype}.dense): more than 2 % apart"))
            continue  # the sparse rate is derived from the same dense peak: one problem, not two
        runs = [p for p in sparse.native() if sparse.runs(p, dtype)] if sparse is not None else []
        native = next((p for p in runs if str(p) == "2:4"), runs[0] if runs else None)
        if rate.sparse is not None and native is not None and sparse is not None:
            sp = peak * sparse.rate(native)
            if abs(sp / rate.sparse - 1) > PEAK_TOLERANCE:
                out.append((f"{PROVENANCE_KEY}.tensor_tflops.{dtype}.sparse", f"dense peak {peak:.1f} x {native} rate "
                            f"{sparse.rate(native):g} = {sp:.1f} TFLOPS, published {rate.sparse:g}: more than "
                            "2 % apart"))
    return out
