"""A local re-proof: a whole passing check of a GPU class on a compiler stack it was not certified with.

``python -m conformance check --class C`` calls :func:`record` with its report. When this machine's
torch/Triton differ from the class's certified stack (``neurobrix.stack``'s rule) and the check
covered every entry of every kernel table of the class, finished and passed with at least the ci
profile's examples per entry, the re-proof is written to ``$NEUROBRIX_HOME/reproofs/<class>.json``:
the sha256 of each tracked file of the class, the stack, and the report's summary and digest. The
runtime accepts it for exactly that stack and those tables. It proves the settings correct on the
new stack; it says nothing about their speed there.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neurobrix import stack
from neurobrix import tables as nb_tables
from neurobrix.errors import counted, printable


def min_examples() -> int:
    """The fewest Hypothesis examples per entry a re-proof takes: the ci profile's (certify's default)."""
    from .strategies import profile

    return int(profile("ci").max_examples)


def _not_whole(report: Any, args: Any) -> str | None:
    """Why this check cannot stand for the whole class (None: it can)."""
    if any(getattr(args, name, None) for name in ("kernel", "dtype", "variant", "where")):
        return "only part of the class was checked (--kernel / --dtype / --variant / --where)"
    if not report.complete:
        return f"the check stopped with {counted(report.left, 'entry', 'entries')} left"
    if report.examples_per_entry < min_examples():
        verb = "is" if report.examples_per_entry == 1 else "are"
        return (
            f"{counted(report.examples_per_entry, 'example')} per entry {verb} fewer than the {min_examples()} a "
            "proof takes"
        )
    return None


def record(report: Any, args: Any, say: Callable[[str], None] = print) -> Path | None:
    """Write the re-proof this check earns, if it earns one; say what was (or why nothing was) recorded. A check
    whose Triton was told to compile otherwise (``neurobrix.stack.compiler_problem``: another ptxas, a kernel
    override, debug mode) earns none: it proved the code compiled so, and run, which refuses that environment,
    would launch the code compiled without it."""
    loaded = nb_tables.load()
    class_id = report.gpu_class
    certified = stack.certified_stack(class_id, loaded)
    running = stack.running_stack()
    if certified is None or stack.compatible(certified, running):
        return None  # the certified stack itself: nothing to re-prove
    if not report.passed:
        say(f"no re-proof recorded: the check of {class_id} failed on {running.describe()}")
        return None
    why = _not_whole(report, args) or stack.compiler_problem(class_id)
    if why is not None:
        say(
            f"no re-proof recorded for {running.describe()}: {why}; `neurobrix run` accepts only a check of "
            f"every entry: {stack.check_command(class_id)}"
        )
        return None
    from neurobrix.gpu import device_facts

    summary = report.as_json()
    check = {
        "profile": report.profile,
        "examples_per_entry": report.examples_per_entry,
        "entries": len(report.results),
        "passed": report.passed,
        "fingerprint": report.fingerprint,
        "summary": summary["summary"],
        "report_sha256": hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest(),
    }
    command = "python -m conformance " + shlex.join(getattr(args, "argv", []) or ["check", "--class", class_id])
    path = stack.write_reproof(class_id, loaded, running, check, device_facts().describe(), command)
    say(
        f"recorded a local re-proof of {class_id} on {running.describe()} (certified with "
        f"{certified.describe()}) in {printable(str(path))}: `neurobrix run` accepts these tables on exactly this "
        "stack. It proves the settings correct here, not that they are the fastest here."
    )
    return path
