"""Regression of simulator outputs: compare result files (or directories of them) with baselines, bless baselines.

Library code: nothing here prints, exits or renders text (``accelsim regress`` in :mod:`accelsim.cli.regress`
does, with :mod:`accelsim.report.regression`). :func:`compare` returns a frozen :class:`Comparison`: drift
is a metric beyond tolerance, a changed string, or a layer / file / metric present on one side only.

Baselines ("goldens") are result *bodies*: the result JSON without ``meta``, keys sorted, with a trailing
newline — no timestamps, versions, commits or paths, so a reviewer can read a golden diff. :func:`bless`
writes them from candidate results.

Modules: :mod:`.loading` (reading, validating and migrating result files; golden bodies),
:mod:`.tolerances` (the pydantic tolerance model), :mod:`.flatten` (results as dotted metrics),
:mod:`.weights` (ranking by share of the model's total), :mod:`.comparison` (:func:`compare`),
:mod:`.outcome` (the result types), :mod:`.bless`.
"""

from accelsim.regress.bless import BlessChange, bless
from accelsim.regress.comparison import compare
from accelsim.regress.flatten import flatten
from accelsim.regress.loading import (
    MIGRATIONS,
    REPORT_NAME,
    RegressInputError,
    ResultFileError,
    SchemaVersionError,
    check_result,
    golden_body,
    golden_text,
    load_result,
    migrate,
)
from accelsim.regress.outcome import (
    ADDED,
    CHANGED,
    DRIFT,
    DRIFT_STATUSES,
    REMOVED,
    RUN_LEVEL,
    WITHIN,
    Comparison,
    Counts,
    MetricGroup,
    OneSided,
    Row,
)
from accelsim.regress.tolerances import DEFAULT_ATOL, DEFAULT_RTOL, Tolerance, Tolerances, as_tolerances

__all__ = [
    "ADDED", "CHANGED", "DEFAULT_ATOL", "DEFAULT_RTOL", "DRIFT", "DRIFT_STATUSES", "MIGRATIONS", "REMOVED",
    "REPORT_NAME", "RUN_LEVEL", "WITHIN", "BlessChange", "Comparison", "Counts", "MetricGroup", "OneSided",
    "RegressInputError", "ResultFileError", "Row", "SchemaVersionError", "Tolerance", "Tolerances", "as_tolerances",
    "bless", "check_result", "compare", "flatten", "golden_body", "golden_text", "load_result", "migrate",
]
