"""Runtime scheduling and SLA: a discrete-event (simpy) serving model over accelsim's service times.

The last stage of the path model graph -> lowering -> kernels -> **runtime scheduling -> SLA outcome**.
Library code: nothing here prints or exits; user mistakes raise :class:`~accelsim.errors.AccelsimError`.

Model
-----
- **Arrivals** (open loop, seeded): Poisson at ``rate`` requests/s over ``duration_s`` simulated seconds
  (or exactly ``requests`` arrivals), or replayed from a CSV trace (``arrival_s`` plus a size column;
  optionally time-scaled to a target rate). Request sizes (``seq`` tokens, prompt/output tokens) come
  from a distribution spec (``fixed``, ``uniform``, ``choice``) or the trace. Arrivals are drawn up
  front as arrays (unit-rate exponentials divided by the rate), so every rate sees the same sample
  path scaled in time: common random numbers, which keep ``find_max_rate``'s bisection monotone.
- **Batching** (one-shot models, e.g. BERT): a Triton-style dynamic batcher. When an instance is free
  it takes the oldest waiting requests as a batch once ``max_batch`` have arrived or the oldest has
  waited ``max_wait_ms``, whichever comes first (immediately, if either already holds). ``instances``
  identical accelerator instances are simpy processes pulling from the one FIFO queue.
- **Service time** of a batch = ``run(load_workload(path, {batch: b, seq: s}), hw, sparsity)
  .total_cycles / (clock_ghz * 1e9)`` seconds, cached per distinct (batch, size) for each sparsity
  (one :class:`SimulatedService` per sparsity), so a long run simulates each shape once. Sizes are
  padded up to a multiple of ``size_bucket`` (the batch runs at its longest padded request, as padded
  batches do), and batch sizes optionally up to a power of two (``batch_bucket: pow2``, as servers
  with captured CUDA graphs / optimisation profiles do), which keeps the cache small.
- **Variability** (named, seeded, OFF by default; every result says whether it was on):
  ``jitter`` multiplies each batch's service time by a mean-1 lognormal factor
  ``exp(sigma*Z - sigma^2/2)``; ``throttle`` has clock-throttle episodes arriving as a Poisson process
  (``episodes_per_s``), each ``duration_ms`` long, during which the clock runs at ``clock_factor`` of
  nominal (a batch that *starts* inside an episode takes ``1/clock_factor`` longer).
- **LLM workloads** (a prefill + a decode workload): iteration-level (continuous) batching per
  instance, as Orca / vLLM do. Each iteration either prefills newly admitted requests (FIFO; at most
  ``max_prefill_tokens`` padded prompt tokens) or runs one decode step for every active request
  (the step is simulated at the batch's longest context, ``kv_len`` padded to ``kv_bucket``). A
  request joins when the decode batch has room (``max_batch``) *and* its whole KV cache
  ((prompt + output - 1) tokens) fits the instance's KV budget
  ``dram.capacity_bytes * memory_utilization - weights as deployed`` (2:4 weights are smaller, so
  sparse leaves more room for KV). Time to first token = end of its prefill - arrival; time per
  output token = (finish - first token) / (output tokens - 1).

Simulation cost: one simpy timeout per batch (one-shot) or per iteration (LLM); per-request state is
preallocated arrays, and latencies are computed vectorised at the end (``np.repeat`` of batch ends).

Modules (each imports only those above it, and nothing from ``report`` or ``cli``)
----------------------------------------------------------------------------------
``config`` RuntimeConfig, variability settings, bounds, ServingError; ``run_record`` ServingRun (one
run's frozen record) and its parts; ``limits`` bounds on serve's inputs and the overload assessment;
``stats`` percentiles, CDF tables, SLA outcome; ``arrivals`` size specs, Poisson arrivals, traces;
``variability`` jitter and throttle at run time; ``batching`` the dynamic batcher; ``llm`` continuous
batching with the KV budget; ``service`` service times from accelsim runs; ``model`` ServingModel and its
run; ``results`` the typed, frozen analysis results; ``capacity`` find_max_rate, latency_vs_load, compare;
``variants`` quality at equal budget (registry figures);
``decision`` the decision over budgets (accelsim decide); ``request`` ServeRequest -> serve() -> ServeResult (what
``accelsim serve`` computes; ``accelsim/cli/serve.py`` prints it and writes the plots).
"""

from accelsim.serving.arrivals import parse_size_spec, poisson_arrivals, read_trace, sample_sizes
from accelsim.serving.batching import BatchTrace, simulate_batching
from accelsim.serving.capacity import compare, find_max_rate, latency_vs_load
from accelsim.serving.config import (
    DoesNotFitError,
    JitterSource,
    RuntimeConfig,
    ServingError,
    ThrottleSource,
    Variability,
)
from accelsim.serving.decision import Decision, decide
from accelsim.serving.llm import LlmTrace, simulate_llm
from accelsim.serving.model import ServingModel
from accelsim.serving.request import ServeRequest, serve
from accelsim.serving.results import (
    BudgetVerdict,
    CapacityEval,
    CapacityResult,
    CapacitySummary,
    CompareResult,
    Comparison,
    LoadCurve,
    LoadPoint,
    QualityResult,
    ServeResult,
    VariantOutcome,
)
from accelsim.serving.run_record import (
    KvCacheReport,
    LatencyStats,
    LoadAssessment,
    QuantileTable,
    ServingRun,
    SlaOutcome,
)
from accelsim.serving.service import SimulatedService
from accelsim.serving.stats import batch_means_ci
from accelsim.serving.variants import (
    CheckedVariants,
    Variant,
    VariantsFile,
    check_variants,
    evaluate_variants,
    load_variants,
    quality_at_budget,
    verdict,
)

__all__ = [
    "ServingError", "DoesNotFitError", "JitterSource", "ThrottleSource", "Variability", "RuntimeConfig",
    "SimulatedService",
    "ServingModel", "BatchTrace", "LlmTrace", "parse_size_spec", "sample_sizes", "poisson_arrivals", "read_trace",
    "simulate_batching", "simulate_llm", "batch_means_ci", "find_max_rate", "latency_vs_load", "compare",
    "Variant", "VariantsFile", "load_variants", "check_variants", "CheckedVariants",
    "evaluate_variants", "verdict", "quality_at_budget", "Decision",
    "decide", "ServeRequest", "serve", "BudgetVerdict",
    "CapacityEval", "CapacityResult", "CapacitySummary", "CompareResult", "Comparison", "LoadCurve", "LoadPoint",
    "QualityResult", "ServeResult", "VariantOutcome", "ServingRun", "LatencyStats", "QuantileTable", "SlaOutcome",
    "LoadAssessment", "KvCacheReport",
]
