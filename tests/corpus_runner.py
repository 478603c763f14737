"""Run every corpus entry through accelsim's CLI inside ONE bounded process; print a JSON line per entry.

Used by tests/test_corpus.py, which starts this file as a subprocess with a 2 GB address-space
limit, so a runaway allocation shows up as a failed entry instead of a swapping CI machine. Each
entry also gets a SIGALRM deadline (60 s): a hang in Python code is reported as a timeout.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
DEADLINE_S = 60


class _Timeout(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def expand(arg: str, tmp: str) -> str:
    """Fill the placeholders an entry may use."""
    return (arg.replace("{corpus}", str(CORPUS)).replace("{tmp}", tmp)
            .replace("{HW}", str(ROOT / "hwconfigs" / "a100-like.yaml"))
            .replace("{WL}", str(ROOT / "workloads" / "gemm-microbench.yaml"))
            .replace("{ROOT}", str(ROOT)))


def run_entry(argv: list[str]) -> dict[str, Any]:
    """Exit code, stdout and stderr of ``accelsim ARGV``, run in this process."""
    from accelsim.cli import main

    out, err = io.StringIO(), io.StringIO()
    signal.alarm(DEADLINE_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse errors
                code = exc.code if isinstance(exc.code, int) else 2
    except _Timeout:
        code, err = -1, io.StringIO(f"TIMEOUT after {DEADLINE_S} s")
    except BaseException as exc:  # noqa: BLE001 - any escape is what the test reports
        import traceback

        code = -2
        err.write("".join(traceback.format_exception(exc)))
    finally:
        signal.alarm(0)
    return {"exit": code, "stdout": out.getvalue()[:6000], "stderr": err.getvalue()[-4000:]}


def main() -> int:
    signal.signal(signal.SIGALRM, _on_alarm)
    entries = json.loads(sys.stdin.read())
    for entry in entries:
        with tempfile.TemporaryDirectory(prefix="accelsim-corpus-") as tmp:
            argv = [expand(str(a), tmp) for a in entry["argv"]]
            result = run_entry(argv)
        print(json.dumps({"id": entry["id"], **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
