"""A tensor-parallel system's energy totals from one device's: every device runs its shard."""

from __future__ import annotations

from typing import Any


def system_energy(device: dict[str, Any], devices: int) -> dict[str, Any]:
    """A system's energy totals from one device's (``RunResult.energy_totals``' keys): every device runs its shard
    (the layers), so each joule and watt figure is ``devices`` x the device's, whose sum already holds its static
    power while the collectives run (no link energy); ratios stay; ``per_device`` keeps the device's figures."""
    out: dict[str, Any] = {k: ({n: x * devices for n, x in v.items()} if isinstance(v, dict) else v * devices)
                           if k.endswith("_j") or k == "avg_power_w" else v for k, v in device.items()}
    out["inferences_per_j"] = 1.0 / out["total_j"] if out["total_j"] else 0.0
    return {**out, "devices": devices, "scope": f"system: {devices} devices, each running its shard",
            "per_device": device}
