"""Sweeps: a spec (grid / random over hardware and workload parameters) run into a folder of results."""

from accelsim.sweep.execute import load_results, run_sweep, spec_from_dict

__all__ = ["load_results", "run_sweep", "spec_from_dict"]
