"""Plain-words notes on surprising data movement in a run: operands re-read from DRAM, partial sums spilled.

The figures come from the result body (per-layer DRAM bytes, the tiling's residency flags and A's reads), so a
note never says more than the simulation did. A layer's weights read once move the bytes they are stored in
(values + metadata, the footprint's), so the re-read factor a note prints is DRAM bytes over stored bytes of
the layers that re-read them (``tiling.a_reads``: a systolic layer whose weights do not stay on chip).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelsim.dtypes import DTYPE_BYTES, stored_bytes
from accelsim.workloads.model import WEIGHT_OPS

# A note is worth printing when the re-read traffic is at least this share of the unique bytes.
REREAD_THRESHOLD = 0.2


@dataclass(frozen=True)
class TrafficNote:
    """One explained excess of DRAM traffic over what the data's size alone would need."""

    tensor: str                 # "weights" or "partial sums"
    layers: tuple[str, ...]     # layers where the operand does not stay on chip, largest traffic first
    dram_bytes: int             # DRAM bytes of the tensor over those layers (weights: values + metadata)
    reference_bytes: int        # what the same data costs when read once (weights: as stored) or written once (C)
    buffer: str                 # the SRAM buffer that is too small, as a config key
    buffer_bytes: int

    def text(self) -> str:
        """One line: what moved, how much more than needed, which layers, which buffer to grow."""
        ratio = self.dram_bytes / self.reference_bytes if self.reference_bytes else float("inf")
        top = ", ".join(self.layers[:3]) + (f" +{len(self.layers) - 3} more" if len(self.layers) > 3 else "")
        if self.tensor == "weights":
            return (f"weights are re-read from DRAM on {len(self.layers)} layer(s) ({top}): {self.dram_bytes:,} bytes, "
                    f"{ratio:.1f}x the {self.reference_bytes:,} bytes they are stored in; a fold's block "
                    f"of weights does not fit {self.buffer} ({self.buffer_bytes:,} bytes), so it is fetched again "
                    f"for every fold of the other dimension")
        return (f"partial sums spill to DRAM on {len(self.layers)} layer(s) ({top}): C traffic {self.dram_bytes:,} "
                f"bytes, {ratio:.1f}x the {self.reference_bytes:,} bytes of their outputs written once; "
                f"a column block of partial sums does not fit {self.buffer} ({self.buffer_bytes:,} bytes)")


def _buffer(hw: dict[str, Any], which: str) -> tuple[str, int]:
    sram = (hw.get("core") or {}).get("sram") or {}
    key = f"{which}_bytes"
    if key in sram and sram[key] is not None:
        return f"core.sram.{key}", int(sram[key])
    unified = int(sram.get("bytes") or 0)
    return "a third of core.sram.bytes", unified // 3


def _outputs(shape: dict[str, int]) -> int:
    return int(shape.get("m", 0)) * int(shape.get("n", 0)) * int(shape.get("batch", 1))


def _a_dram(layer: dict[str, Any]) -> int:
    dram = layer["bytes"]["dram"]
    return int(dram["a_values"]) + int(dram.get("a_metadata") or 0)


def traffic_notes(body: dict[str, Any]) -> tuple[TrafficNote, ...]:
    """Notes for a run body (``RunResult.body()``): weights re-read and partial sums spilled, when large."""
    layers = [lay for lay in body.get("layers", []) if "a_resident" in (lay.get("tiling") or {})]
    notes: list[TrafficNote] = []
    hw = body.get("hardware") or {}
    # weight layers whose weights the array reads more than once (activation operands are not weights)
    reread = sorted((lay for lay in layers if lay.get("op") in WEIGHT_OPS and int(lay["tiling"].get("a_reads", 1)) > 1),
                    key=lambda lay: -_a_dram(lay))
    dram_a = sum(_a_dram(lay) for lay in reread)
    stored = round(sum(_a_dram(lay) / int(lay["tiling"]["a_reads"]) for lay in reread))
    if reread and stored and dram_a > (1 + REREAD_THRESHOLD) * stored:
        name, size = _buffer(hw, "filter")
        notes.append(TrafficNote("weights", tuple(lay["name"] for lay in reread), dram_a, stored, name, size))
    spill = sorted((lay for lay in layers if not lay["tiling"]["c_resident"] and lay["bytes"]["dram"]["c"]
                    > (1 + REREAD_THRESHOLD) * lay["bytes"]["sram"]["c"] > 0),
                   key=lambda lay: -lay["bytes"]["dram"]["c"])
    elem = DTYPE_BYTES.get(str((body.get("workload") or {}).get("dtype")), 0)
    if spill and elem:
        name, size = _buffer(hw, "ofmap")
        written = sum(stored_bytes(_outputs(lay["shape"]), elem) for lay in spill)
        c_bytes = sum(int(lay["bytes"]["dram"]["c"]) for lay in spill)
        notes.append(TrafficNote("partial sums", tuple(lay["name"] for lay in spill), c_bytes, written, name, size))
    return tuple(notes)
