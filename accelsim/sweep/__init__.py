"""Design-space sweeps: many hardware points x workloads x settings x sparsity patterns, in parallel.

From Python::

    from accelsim.sweep import spec_from_dict, run_sweep, load_results

    spec = spec_from_dict({"name": "bw", "hardware": "hwconfigs/tpu-like.yaml",
                           "workloads": ["workloads/bert-base.yaml"], "sparsity": ["dense", "2:4"],
                           "grid": {"dram.bandwidth_gb_s": [100, 400]}})
    run = run_sweep(spec, "out/bw", workers=2)      # a SweepRun: counts, files, timings
    table = load_results("out/bw")                  # a SweepTable: columns, rows (.to_dataframe())

Modules, in the order they depend on each other: ``columns`` (the result table's columns),
``sampling`` (grid product, seeded random draws, integer rounding), ``schema`` (the spec's pydantic
model), ``points`` (hardware points, validated), ``spec`` (a spec resolved: files read, points
built), ``rows`` (a worker: metric rows of points), ``store`` (the results folder: plan, chunks,
results.csv / .parquet), ``executors`` (process pool, Dask), ``run`` (:func:`run_sweep`),
``results`` (:func:`load_results`). Nothing here prints, exits or draws: ``accelsim.cli.sweep``
runs the commands and ``accelsim.report.sweep_plots`` draws a :class:`SweepTable`.
"""

from accelsim.sweep.columns import METRICS, PLAN, cost_names
from accelsim.sweep.points import Point, with_overrides
from accelsim.sweep.results import SweepTable, load_results
from accelsim.sweep.run import SweepRun, run_sweep, work_context
from accelsim.sweep.sampling import field_kind, round_to_field
from accelsim.sweep.schema import SPEC_KEYS, RandomSpec, SweepSpecModel
from accelsim.sweep.spec import MAX_POINTS, ROWS_PER_POINT_LIMIT, SweepSpec, WorkloadEntry, load_spec, spec_from_dict

__all__ = ["MAX_POINTS", "METRICS", "PLAN", "ROWS_PER_POINT_LIMIT", "SPEC_KEYS", "Point", "RandomSpec", "SweepRun",
           "SweepSpec", "SweepSpecModel", "SweepTable", "WorkloadEntry", "cost_names", "field_kind", "load_results",
           "load_spec", "round_to_field", "run_sweep", "spec_from_dict", "with_overrides", "work_context"]
