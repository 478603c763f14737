"""What ``accelsim validate-hw`` does: read the measurements and the GPU -> config map, validate, write outputs."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from accelsim.analysis.calibration.across_gpus import leave_one_gpu_out
from accelsim.analysis.gpu_validation import validate_hw
from accelsim.analysis.measurements import Measurement, match_row, read_measurements
from accelsim.errors import AccelsimError
from accelsim.fileio import figure_files, same_file, write_all
from accelsim.hardware.kinds import kind_of, kinds
from accelsim.hardware.model import Hardware, load_hardware
from accelsim.report.validation_text import format_logo, format_report, logo_csv, rows_csv
from accelsim.results import dumps_finite


def parse_hw_map(items: Sequence[str]) -> tuple[dict[str, Hardware], dict[str, str]]:
    """``["A100=hwconfigs/a100-like.yaml", ...]`` -> ({gpu: Hardware}, {gpu: path})."""
    hw_map: dict[str, Hardware] = {}
    sources: dict[str, str] = {}
    if not items:
        raise AccelsimError("--hw-map: give at least one GPU=CONFIG, e.g. --hw-map A100=hwconfigs/a100-like.yaml")
    for item in items:
        gpu, sep, path = item.partition("=")
        if sep and gpu.rstrip().lower().endswith("@backend"):  # GPU@backend=NAME=CONFIG
            backend, sep, path = path.partition("=")
            gpu = f"{gpu.rstrip()}={backend.strip()}"
        gpu, path = gpu.strip(), path.strip()
        if not sep or not gpu or not path:
            raise AccelsimError(f"--hw-map: expected GPU=CONFIG (e.g. A100=hwconfigs/a100-like.yaml) or "
                                f"GPU@backend=NAME=CONFIG, got {item!r}")
        name, at, source = gpu.partition("@")
        if not name.strip() or (at and not source.strip()) or source.strip().lower() == "backend=":
            raise AccelsimError(f"--hw-map: {item!r}: expected GPU=CONFIG or GPU@SOURCE=CONFIG with both parts "
                                "named, e.g. A100@vllmbench=hwconfigs/a100-pcie-like.yaml, or GPU@backend=NAME=CONFIG")
        if gpu in hw_map:
            raise AccelsimError(f"--hw-map: GPU {gpu!r} is mapped twice")
        hw = load_hardware(path)
        if not kind_of(hw).calibrated_fields:  # the kinds fitted on GPU rows (tensor_core), as calibrate asks
            gpu_kinds = " or ".join(k.name for k in kinds() if k.calibrated_fields)
            raise AccelsimError(f"--hw-map {item!r}: {hw.name} is a {hw.core.compute.kind} part; validate-hw scores "
                                f"GPU measurements on a GPU model (core.compute.kind: {gpu_kinds})")
        hw_map[gpu] = hw
        sources[gpu] = path
    return hw_map, sources


def read_all(paths: str | Path | Sequence[str | Path]) -> list[Measurement]:
    """The rows of one or several measurement CSVs, in order (line numbers are per file)."""
    if isinstance(paths, str | Path):
        return read_measurements(paths)
    return [row for path in paths for row in read_measurements(path)]


OUTPUT_NAMES = ("validation.json", "validation.csv", "validation_scatter.png", "validation_scatter.svg")


def _check_out(out_dir: str | Path, inputs: Sequence[str | Path], logo: bool) -> None:
    """Refuse, before any work, an ``--out`` that is empty, not a folder, or would replace one of the inputs."""
    if not str(out_dir).strip():
        raise AccelsimError("--out: empty path (give a directory)")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise AccelsimError(f"--out {out}: exists and is not a folder (--out takes a directory)")
    names = (*OUTPUT_NAMES, *(("leave_one_gpu_out.csv",) if logo else ()))
    for name in names:
        for path in inputs:
            if same_file(out / name, path):
                raise AccelsimError(f"--out {out}: its {name} is this command's input {path} (the result would "
                                    "replace it); write elsewhere")


def validate_hw_command(measurements_csv: str | Path | Sequence[str | Path], hw_map: Sequence[str],
                        out_dir: str | Path | None = None, *, logo: bool = False,
                        progress: Callable[[str], None] | None = None) -> tuple[int, str]:
    """Handler for ``accelsim validate-hw MEASUREMENTS.csv --hw-map GPU=CONFIG... [--out DIR]``.

    Returns (exit code, text report). Exit 0 when at least one row was scored, 1 when none could
    be (every matched row was unscored; a map that matches no row is an error). With ``out_dir`` it writes
    validation.json (the whole result), validation.csv (one line per row) and validation_scatter.png/.svg, and
    with ``logo`` leave_one_gpu_out.csv (each left-out GPU's rows as its fold predicts them, then the in-sample fit's).
    User errors (bad CSV, bad map, bad config) raise :class:`~accelsim.errors.AccelsimError`
    with a one-line message naming the file, line and column.
    """
    inputs = [measurements_csv] if isinstance(measurements_csv, str | Path) else list(measurements_csv)
    if out_dir is not None:
        _check_out(out_dir, [*inputs, *(item.rpartition("=")[2].strip() for item in hw_map)], logo)
    rows = read_all(measurements_csv)
    hws, sources = parse_hw_map(list(hw_map))
    if rows and not any(match_row(r, list(hws)) is not None for r in rows):
        names = sorted({r.gpu for r in rows})
        raise AccelsimError(f"--hw-map: no row of the measurements matches any mapped GPU ({', '.join(hws)}); "
                            f"the rows' GPUs: {', '.join(names[:8])}{' ...' if len(names) > 8 else ''}")
    label = measurements_csv if isinstance(measurements_csv, str | Path) else ", ".join(map(str, measurements_csv))
    result = replace(validate_hw(rows, hws, hw_sources=sources), measurements=str(label))
    text = format_report(result)
    folds = leave_one_gpu_out(rows, hws, progress=progress) if logo else None
    if folds is not None:
        text += "\n\n" + format_logo(folds)
    if out_dir is not None:
        out = Path(out_dir)
        from accelsim.report.validation_plots import BASENAME, DPI, scatter_figure  # matplotlib: only when drawing

        files: dict[str | os.PathLike[str], bytes | str] = {
            out / "validation.json": dumps_finite(result.to_dict(), "validate-hw", indent=2, sort_keys=True) + "\n",
            out / "validation.csv": rows_csv(result)}
        if folds is not None:  # every row of each GPU left out as its fold predicts it, then in-sample
            files[out / "leave_one_gpu_out.csv"] = logo_csv(folds)
        for path, data in figure_files(scatter_figure(result), out / BASENAME, ("png", "svg"), DPI).items():
            files[path] = data
        paths = write_all(files)  # all four or none
        text += "\n\nwrote " + ", ".join(str(p) for p in paths)
    scored = sum(1 for r in result.rows if r.scored)
    return (0 if scored else 1), text
