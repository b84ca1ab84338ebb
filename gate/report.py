"""The gate's report: every dist checked, every finding, the install smoke, and one verdict.

Rendered as text (grouped by dist, then by check, the verdict on the last line) and as JSON
(``format: 1``; see :meth:`Report.as_json`) for the release workflow. Both name the commit the repository's
working tree was judged as, and whether every tracked file there is that commit's (``repository``).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .archive import Kind
from .checks import Finding
from .repository import TreeState
from .smoke import SmokeResult

JSON_FORMAT = 1


# Control (line feed and carriage return too), format (bidi overrides), surrogate (a file name's bytes that are no
# UTF-8), private-use and unassigned characters, and the line and paragraph separators U+2028 and U+2029, at which
# Python's str.splitlines, and log viewers built on it, start a new line.
_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def shown(text: str) -> str:
    """``text`` safe to print as one line of a terminal or a CI log: names and messages come from the archive under
    check (and from the file names of the upload folder), so every character a terminal obeys rather than prints is
    written as its escape: a member named with ANSI codes or a right-to-left override cannot repaint the log or hide a
    finding, and one holding a line feed or U+2028 cannot start a line of its own, a forged ``gate: PASSED`` that
    `grep '^gate: PASSED'` finds (gate round 32: the report was escaped whole, its line feeds kept)."""
    return _uncommanded("".join(ch if unicodedata.category(ch) not in _UNSHOWN else ascii(ch)[1:-1] for ch in text))


def _uncommanded(line: str) -> str:
    """``line`` (escaped) with nothing a CI runner obeys as a command (gate round 49). GitHub's runner reads every line
    of a step's output for a workflow command: ``::name props::data`` where the line opens with it once its leading
    white space is trimmed, and ``##[name props]data`` anywhere in it (actions/runner, ``ActionCommand.TryParseV2``
    and ``TryParse``); Azure Pipelines reads ``##vso[...]`` anywhere. A member or dist so named had its finding's line
    hidden (``debug``, ``add-mask``, ``error``: the runner prints no line for them), turned into an annotation, or the
    lines after it, the verdict too, folded under a title of its choosing (``group``). Every ``##`` is written
    ``#\\x23`` and a leading ``::`` ``\\x3a:``, as :func:`shown` writes what a terminal obeys."""
    line = line.replace("##", "#\\x23")
    body = line.lstrip()
    if body.startswith("::"):
        start = len(line) - len(body)
        line = f"{line[:start]}\\x3a{line[start + 1 :]}"
    return line


# The longest line the text report prints (gate round 32): a zip name may be 65,535 bytes, a path of 32,767 components,
# and each finding that names it printed it whole, 60 lines of 64 KiB for one wheel; the middle of a longer line is
# left out, and the JSON report holds it whole.
LINE_MAX = 2000


def bounded(line: str) -> str:
    """``line`` if it is at most :data:`LINE_MAX` characters; else its first and last 1,000 with a note between."""
    if len(line) <= LINE_MAX:
        return line
    keep = LINE_MAX // 2
    cut = f" ...[{len(line) - 2 * keep} characters left out: the --json report holds the line whole]... "
    return line[:keep] + cut + line[-keep:]


@dataclass(frozen=True)
class DistSummary:
    """One checked file as the publish step should see it: what it is, and the sha256 of its bytes."""

    file: str
    path: str
    kind: Kind
    name: str | None
    version: str | None
    sha256: str | None  # None: refused unread, larger than the limits (G308), so never hashed

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "path": self.path,
            "kind": self.kind,
            "name": self.name,
            "version": self.version,
            "sha256": self.sha256,
        }


@dataclass
class Report:
    reference: Path
    expect_version: str | None
    dists: list[DistSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    smoke: list[SmokeResult] = field(default_factory=list)
    smoke_skipped: str | None = None  # why the smoke did not run at all (e.g. --no-smoke)
    repository: TreeState | None = None  # the commit judged against, and whether the working tree is that commit

    @property
    def passed(self) -> bool:
        return not self.findings

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def as_json(self) -> dict[str, Any]:
        return {
            "format": JSON_FORMAT,
            "verdict": "passed" if self.passed else "refused",
            "exit_code": self.exit_code,
            "reference": str(self.reference),
            "expect_version": self.expect_version,
            "dists": [d.as_json() for d in self.dists],
            "smoke": [s.as_json() for s in self.smoke],
            "findings": [f.as_json() for f in self.findings],
            "repository": None if self.repository is None else self.repository.as_json(),
            "error": None,
        }

    def render(self) -> str:
        lines = [f"gate: judged against the tracked list {self.reference}"]
        if self.repository is not None:
            lines.append(f"gate: the repository's working tree: {self.repository.describe()}")
        groups: dict[str, list[Finding]] = {}
        for finding in self.findings:
            groups.setdefault(finding.dist, []).append(finding)
        described = {d.file: f"{d.kind}, {d.name or '?'} {d.version or '?'}" for d in self.dists}
        for dist in list(dict.fromkeys([*groups, *described])):
            found = groups.get(dist, [])
            lines.append(
                f"{dist} ({described.get(dist, 'upload folder')}): "
                f"{'ok' if not found else f'{len(found)} finding' + ('s' if len(found) > 1 else '')}"
            )
            by_check: dict[str, list[Finding]] = {}
            for finding in found:
                by_check.setdefault(finding.code, []).append(finding)
            for code in sorted(by_check):
                lines.append(f"  {code} {by_check[code][0].check.title}")
                for finding in by_check[code]:
                    where = f"{finding.path}: " if finding.path else ""
                    lines.append(f"      {where}{finding.message}")
        for result in self.smoke:
            lines.append(f"install smoke, {result.wheel}: {result.status}: {result.detail}")
        lines.append(self.verdict())
        return "\n".join(bounded(shown(line)) for line in lines)  # each line escaped alone: none can hold another

    def verdict(self) -> str:
        kinds = Counter(d.kind for d in self.dists)
        what = " and ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in sorted(kinds.items(), reverse=True))
        if not self.passed:
            codes = Counter(f.code for f in self.findings)
            listed = ", ".join(f"{c}" + (f" x{n}" if n > 1 else "") for c, n in sorted(codes.items()))
            count = len(self.findings)
            return (
                f"gate: REFUSED: {count} finding{'s' if count > 1 else ''} ({listed}) in {what or 'no dists'}; "
                "do not upload"
            )
        identities = sorted({f"{d.name} {d.version}" for d in self.dists})
        if self.smoke_skipped:
            smoke = f"install smoke SKIPPED ({self.smoke_skipped}): not a release check"
        elif self.smoke and all(s.status == "passed" for s in self.smoke):
            smoke = "install smoke passed"
        else:
            smoke = (
                "install smoke: " + "; ".join(f"{s.wheel} {s.status}" for s in self.smoke)
                if self.smoke
                else "no wheel to install"
            )
        tree = ""
        if self.repository is not None and not self.repository.clean:
            tree = (
                f", judged against a working tree that is not a commit's ({self.repository.describe()[:200]}): "
                "not a release check"
            )
        return f"gate: PASSED: {', '.join(identities)}, {what}, no findings, {smoke}{tree}"


def unusable_json(message: str, reference: Path | None, expect_version: str | None) -> dict[str, Any]:
    """The JSON report of a run that could not judge its input (exit 2)."""
    return {
        "format": JSON_FORMAT,
        "verdict": "unusable",
        "exit_code": 2,
        "reference": None if reference is None else str(reference),
        "expect_version": expect_version,
        "dists": [],
        "smoke": [],
        "findings": [],
        "repository": None,
        "error": message,
    }
