"""`check --record`: bind a class's kernel tables to the kernel code a whole passing check proved them on.

A table's proofs were made on one kernel code (``neurobrix.stack.kernel_source``: the digest of the ``neurobrix/ops``
files a kernel's calls run), which its provenance names (``kernel_source``) and its index states (``stack.source``);
``neurobrix run`` launches a setting only where that is the code it would run. A kernel edited since (a fix, a new
variant, the PDL wait) leaves its tables proven on other code. A check on the class's own device and certified stack
that passes every entry of a kernel's table, with at least the examples a proof takes, proves each entry on the code
it ran; ``--record`` then writes that code's digest into the table and appends the check to its provenance's
``reproved`` (date, commit, command, stack, profile, examples, worst error), the entries and their certification
proofs untouched. A check stopped early, of part of a table (``--dtype``, ``--where``, ``--variant``), that failed,
or on another stack (where a passing check is a local re-proof instead: :mod:`conformance.reproof`) records nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neurobrix import stack
from neurobrix import tables as nb_tables
from neurobrix.errors import UsageError, counted
from neurobrix.kernel_source import declared_kernels


def stale(class_id: str, loaded: nb_tables.Tables) -> dict[str, str | None]:
    """kernel -> the code its table's proofs were made on (None: no code recorded), for each kernel table of the class
    not proven on its code as it is here."""
    found = {}
    ours = declared_kernels()  # (a retired kernel's table launches nothing: no code here to bind it to)
    for kernel in loaded.kernels(class_id):
        if kernel not in ours:
            continue
        index = loaded.index(class_id, kernel)
        recorded = index.stack.get("source") if index is not None else None
        if recorded != stack.kernel_source(kernel):
            found[kernel] = recorded
    return found


def require_recordable(class_id: str, kernels: list[str] | None = None) -> None:
    """Refuse (UsageError) ``--record`` before any check runs where it could not write the class's tables it would
    bind: it ran the whole check (minutes on the interpreter, 394 s for the H200 class on two GPUs) and then ended in
    "Operation not permitted" on a scratch file, exit 1, the passing check recorded nowhere. Nothing to bind (every
    table of the ``kernels`` checked, default all, bound already), nothing is refused: the check says so at its end."""
    from .certify import _unwritable

    loaded = nb_tables.load()
    if class_id not in loaded.classes or not set(stale(class_id, loaded)) & set(kernels or loaded.kernels(class_id)):
        return
    root = Path(loaded.location.root)
    unwritable = _unwritable(root, class_id)
    if unwritable:
        raise UsageError(
            f"--record: cannot write the tables in {root} ({unwritable}), so this check could bind none of them to "
            "its kernel code; nothing was checked. Point NEUROBRIX_TABLES at a folder you can write (a copy: cp -r "
            f"{root} /tmp/tables-copy), or check without --record"
        )


def _covered(report: Any, loaded: nb_tables.Tables, kernel: str) -> tuple[int, int, float]:
    """(entries of the kernel's table the report passed, entries and dtypes it holds, their worst error ratio)."""
    from .check import _key, select

    index = loaded.index(report.gpu_class, kernel)
    need = {_key(kernel, d, e.domain.describe(), dict(e.config)) for e, d in select(index, None)} if index else set()
    passed = {
        _key(r.kernel, r.dtype, r.domain, r.config): r.worst_ratio
        for r in report.results
        if r.kernel == kernel and r.passed and not r.shipped_in
    }
    worst = max((passed[k] for k in need if k in passed), default=0.0)
    return len(need & set(passed)), len(need), worst


def record(report: Any, args: Any, say: Callable[[str], None] = print) -> list[Path]:
    """With ``--record``, bind each kernel table of the checked class that this check proved whole on this code;
    without it, say which tables it could have bound. The index paths written."""
    from . import certify
    from .reproof import min_examples

    loaded = nb_tables.load()
    class_id = report.gpu_class
    unbound = stale(class_id, loaded)
    wanted = getattr(args, "record", False)
    if not unbound:
        if wanted:
            say(f"every kernel table of {class_id} is already bound to its kernel's code here: nothing to record")
        return []
    certified = stack.certified_stack(class_id, loaded)
    running = stack.running_stack()
    why = None
    if not report.passed:
        why = "the check failed"
    elif certified is None or not stack.compatible(certified, running):
        named = certified.describe() if certified else "stack"
        why = (
            f"it ran on {running.describe()}, not the class's certified {named} (a whole passing check there is a "
            "local re-proof instead)"
        )
    elif report.examples_per_entry < min_examples():
        why = f"{report.examples_per_entry} example(s) per entry are fewer than the {min_examples()} a proof takes"
    else:
        why = stack.compiler_problem(class_id)
    proved = {}
    for kernel in sorted(unbound):
        done, total, worst = _covered(report, loaded, kernel)
        if done == total and total:
            proved[kernel] = worst
    if not wanted:
        if proved and why is None:
            names = ", ".join(sorted(proved))
            say(
                f"this check proved {names} whole on the kernel code here, which their tables are not bound to; run it "
                "again with --record (and --resume REPORT to carry its entries over) to bind them"
            )
        return []
    if why is not None:
        say(f"nothing recorded: {why}")
        return []
    for kernel in sorted(set(unbound) - set(proved)):
        done, total, _ = _covered(report, loaded, kernel)
        if done:
            say(f"{kernel} not recorded: this check passed {done} of its table's {total} entry checks, not all")
    if not proved:
        say(
            "nothing recorded: no kernel table not yet bound to its code was checked whole (check every entry of a "
            "kernel: no --dtype, --where or --variant, and finish with --resume)"
        )
        return []
    root = Path(loaded.location.root)
    command = "python -m conformance " + shlex.join(getattr(args, "argv", []) or ["check", "--class", class_id])
    run = certify.provenance(command)
    written = []
    for kernel, worst in proved.items():
        table = certify.existing_table(root, class_id, kernel)
        if table is None:
            continue
        source = stack.kernel_source(kernel)
        done, total, _ = _covered(report, loaded, kernel)
        check = {
            "kernel_source": source,
            "date": run["date"],
            "git_commit": run["git_commit"],
            "command": command,
            "torch": running.torch,
            "triton": running.triton,
            "device": run["device"].get("name", run["device"].get("backend", "")),
            "profile": report.profile,
            "examples_per_entry": report.examples_per_entry,
            "entry_checks": total,
            "worst_error_ratio": round(float(worst), 4),
        }
        prov = dict(table.provenance)
        prov["kernel_source"] = source
        prov["reproved"] = [*prov.get("reproved", []), check]
        written.append(certify.write_table(root, class_id, kernel, list(table.entries), prov))
        previous = unbound[kernel]
        say(
            f"recorded: {kernel}'s {counted(len(table.entries), 'entry', 'entries')} on {class_id} proven on its code "
            f"{source} ({counted(total, 'entry check', 'entry checks')}, worst {worst:.3f} of the bound; bound "
            f"before to {previous or 'no kernel code'})"
        )
    return written
