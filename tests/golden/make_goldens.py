"""Generate accelsim's golden matrix: every shipped hwconfig x small workloads x {dense, 2:4}.

    python tests/golden/make_goldens.py OUT_DIR     # write candidate bodies into OUT_DIR
    python tests/golden/make_goldens.py --bless     # regenerate and bless tests/golden/bodies (lists changes)

Each case is written as ``OUT_DIR/<hwconfig>/<workload>.<dense|2-4>.json``: the result body
(no ``meta``: keys sorted, indent 2, trailing newline), exactly what ``accelsim regress --bless``
stores. The matrix is fixed here so that the test suite and the bless command agree.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = Path(__file__).resolve().parent
BODIES = GOLDEN_DIR / "bodies"
TOLERANCES = GOLDEN_DIR / "tolerances.yaml"

# Every shipped hardware config runs the small GEMM/CNN lists; every other shipped workload
# (at small sizes) runs on one systolic and one GPU-like config, so the matrix covers every
# hwconfig and every workload while the bodies stay small enough to review.
EVERY_HW: list[tuple[str, dict[str, Any]]] = [
    ("gemm-microbench.yaml", {}),
    ("resnet18.yaml", {}),
]
SOME_HW: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "hwconfigs/tpu-like.yaml": [
        ("bert-base.yaml", {"batch": 1, "seq": 64}),
        ("mobilenetv2.yaml", {}),
        ("resnet50.yaml", {}),
        ("bert-base-gemms.yaml", {"batch": 1, "seq": 64}),
    ],
    "hwconfigs/a100-like.yaml": [
        ("bert-base.yaml", {"batch": 1, "seq": 64}),
        ("mobilenetv2.yaml", {}),
        ("vit-b16.yaml", {"seq": 50}),
        ("llama2-7b-decode.yaml", {"kv_len": 128}),
    ],
}
WORKLOADS = EVERY_HW  # kept for callers that list the per-config workloads
SPARSITIES = ("dense", "2:4")


@dataclass(frozen=True)
class Case:
    hw: str                      # relative to the repository root
    workload: str
    params: dict[str, Any] = field(default_factory=dict, hash=False)
    sparsity: str = "dense"

    @property
    def relpath(self) -> str:
        return f"{Path(self.hw).stem}/{Path(self.workload).stem}.{self.sparsity.replace(':', '-')}.json"


def matrix() -> list[Case]:
    """Every shipped hardware config x the small lists, plus the other workloads on two configs (system files,
    8xh100-like..., are tensor-parallel groups of shipped devices: tests/test_tensor_parallel.py covers them)."""
    hws = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "hwconfigs").glob("*.yaml")
                 if not p.name.startswith("8x"))
    cases = []
    for hw in hws:
        for wl, params in EVERY_HW + SOME_HW.get(hw, []):
            for sp in SPARSITIES:
                cases.append(Case(hw, f"workloads/{wl}", params, sp))
    return cases


def generate(out_dir: str | Path, cases: list[Case] | None = None,
             progress: Callable[[int, int], None] | None = None) -> list[Path]:
    """Simulate each case and write its golden body under ``out_dir``; return the written paths.

    ``progress(done, total)`` is called after each case.
    """
    from accelsim.fileio import write_atomic
    from accelsim.hardware.model import load_hardware
    from accelsim.regress import golden_body, golden_text
    from accelsim.simulation import run
    from accelsim.workloads.model import load_workload

    out = Path(out_dir)
    written = []
    hw_cache: dict[str, Any] = {}
    todo = cases if cases is not None else matrix()
    for done, case in enumerate(todo, 1):
        hw = hw_cache.get(case.hw)
        if hw is None:
            hw = hw_cache[case.hw] = load_hardware(ROOT / case.hw)
        model = load_workload(ROOT / case.workload, dict(case.params))
        result = run(model, hw, case.sparsity, hw_source=case.hw)
        path = out / case.relpath
        write_atomic(path, golden_text(golden_body(result)))
        written.append(path)
        if progress is not None:
            progress(done, len(todo))
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="make_goldens.py", description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?", help="directory to write the candidate bodies into")
    p.add_argument("--bless", action="store_true", help="regenerate the matrix and bless tests/golden/bodies with it")
    args = p.parse_args(argv)
    if args.bless == bool(args.out):
        p.error("give either OUT_DIR or --bless")
    from accelsim.cli.common import progress_bar

    bar, update = progress_bar(unit="case")
    if args.out:
        with bar:
            paths = generate(args.out, progress=update)
        print(f"wrote {len(paths)} golden bodies into {args.out}")
        return 0
    from accelsim.cli.regress import regress_command

    with tempfile.TemporaryDirectory(prefix="accelsim-goldens-") as tmp:
        with bar:
            generate(tmp, progress=update)
        code, text = regress_command(BODIES, tmp, TOLERANCES, bless=True)
    text = text.replace(tmp, "<regenerated>").replace(f"{ROOT}{os.sep}", "")
    (sys.stderr if code == 2 else sys.stdout).write(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
