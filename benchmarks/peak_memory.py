"""Peak memory (RSS) of commands on the largest shapes input validation admits.

Each case runs the CLI in a fresh process and prints that process's peak resident set size, next to the
same command on a 64^3 GEMM (imports, numba's cached kernels, matplotlib): the difference is what the
shape itself costs. Cases: ``validate-hw`` on one measurement row with m = n = 2^31-1, k = 1 (k = 2 or
more passes the 2^62-MAC limit and is refused), and ``accelsim run`` on a one-GEMM workload of that shape
on a100-like and tpu-like, dense and 2:4.

A 2^31-1 x 2^31-1 GEMM on a100-like has a CTA grid of 8,388,608 x 16,777,216; the L2-reuse model once
built ``set(range(bands))`` of the raster's bands (8,388,608 of them for a one-row band), ~570 MB.

Run: .venv/bin/python benchmarks/peak_memory.py [--shape M N K]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
M31 = 2**31 - 1
HEAD = "gpu,dtype,m,n,k,dense_time_us,sparse_time_us,speedup,source,notes\n"

# the child: run the CLI in-process with its output discarded, then print its own peak RSS (KiB on Linux)
CHILD = ("import contextlib, io, resource, sys; from accelsim.cli import main\n"
         "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
         "    rc = main(sys.argv[1:])\n"
         "print(rc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")


def peak_mib(argv: list[str]) -> tuple[int, float]:
    """(exit code, peak RSS in MiB) of ``accelsim ARGV`` in a fresh process."""
    proc = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, cwd=ROOT,
                          check=True, timeout=600)
    rc, kib = proc.stdout.split()[-2:]
    scale = 1 / 1024 / 1024 if sys.platform == "darwin" else 1 / 1024  # ru_maxrss: bytes on macOS
    return int(rc), int(kib) * scale


def cases(tmp: Path, m: int, n: int, k: int) -> list[tuple[str, list[str], list[str]]]:
    """(label, argv on the big shape, argv on a 64^3 shape)."""
    out: list[tuple[str, list[str], list[str]]] = []
    for shape, tag in (((m, n, k), "big"), ((64, 64, 64), "small")):
        (tmp / f"{tag}.csv").write_text(HEAD + "A100,fp16,{},{},{},590,326,,bench,kernel-gemm\n".format(*shape))
        (tmp / f"{tag}.yaml").write_text("name: g\ndtype: fp16\nlayers:\n  - {{name: g, op: gemm, m: {}, n: {}, "
                                         "k: {}}}\n".format(*shape))

    def validate(tag: str) -> list[str]:
        return ["validate-hw", str(tmp / f"{tag}.csv"), "--hw-map", f"A100={ROOT / 'hwconfigs/a100-like.yaml'}",
                "-o", str(tmp / f"out-{tag}")]

    out.append(("validate-hw, a100-like", validate("big"), validate("small")))
    for hw in ("a100-like", "tpu-like"):
        for sp in ("dense", "2:4"):
            def run(tag: str, hw: str = hw, sp: str = sp) -> list[str]:
                return ["run", "--hw", str(ROOT / "hwconfigs" / f"{hw}.yaml"), "--workload", str(tmp / f"{tag}.yaml"),
                        "--sparsity", sp, "--format", "json"]
            out.append((f"run, {hw}, {sp}", run("big"), run("small")))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", nargs=3, type=int, metavar=("M", "N", "K"), default=[M31, M31, 1])
    m, n, k = ap.parse_args().shape
    print(f"peak RSS (MiB), GEMM m={m:,} n={n:,} k={k:,} vs the same command on 64^3, each in a fresh process")
    print(f"{'case':<26} {'exit':>4} {'big':>8} {'64^3':>8} {'extra':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, big, small in cases(Path(tmp), m, n, k):
            _, base = peak_mib(small)
            rc, peak = peak_mib(big)
            print(f"{label:<26} {rc:>4} {peak:>8.1f} {base:>8.1f} {peak - base:>8.1f}")
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB)")


if __name__ == "__main__":
    main()
