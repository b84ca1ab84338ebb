"""The compiler stack a GPU class was proven with, and whether this machine may run its settings.

A certified setting is proven on the code one compiler generates from it: the same block sizes
compiled by another Triton are other code, never checked against float64. So the engine runs a
class's settings only on the stack they were proven with, by this rule: **Triton exactly the
certified version, torch the same major.minor** (torch's patch releases keep its Triton-facing
side; its local build tag, e.g. ``+cu130``, says where the wheel came from; a pre-release or development
build, ``2.11.0a0+git...`` or ``2.11.0.dev...``, is no release of 2.11 and stands only for itself).

A user who must run another stack can re-prove the class on it: ``python -m conformance check
--class C`` on that stack, when every entry passes, records a local re-proof in
``$NEUROBRIX_HOME/reproofs/<class>.json`` (the sha256 of every tracked table file of the class, the
stack, Triton's own hash of its build, a digest of the kernels' sources, a digest of the check's report).
The runtime accepts it for exactly that torch and Triton build, those tables and those kernels; it is stale
as soon as one changes. A
re-proof proves the settings correct on the new stack, not that they are the fastest there.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import CompilerStackError, TablesError, UsageError
from .kernel_source import AWAITING_REPROOF, declared_kernels, kernel_source
from .tables import Tables, load, record_digest

REPROOF_FORMAT = 1
PACKAGE = Path(__file__).resolve().parent  # this neurobrix's folder (in site-packages, or a checkout's)
PYTORCH_INDEX = "https://download.pytorch.org/whl"


@dataclass(frozen=True)
class Stack:
    torch: str
    triton: str

    def describe(self) -> str:
        return f"torch {self.torch} and Triton {self.triton}"

    def as_dict(self) -> dict[str, str]:
        return {"torch": self.torch, "triton": self.triton}


def recorded_stacks(class_id: str, tables: Tables | None = None) -> dict[str, Stack]:
    """kernel -> the stack its settings index says it was certified with (the index's ``stack``, copied by
    certify from the run's provenance; the one place that reads it)."""
    loaded = tables if tables is not None else load()
    found = {}
    for name in loaded.kernels(class_id):
        index = loaded.index(class_id, name)
        if index is not None:
            found[name] = Stack(str(index.stack["torch"]), str(index.stack["triton"]))
    return found


def certified_stack(class_id: str, tables: Tables | None = None) -> Stack | None:
    """The one stack ``class_id`` was certified with; None when it has no kernel tables yet. Tables of one
    class certified on different stacks are refused (TablesError): no single stack proves them all."""
    stacks = recorded_stacks(class_id, tables)
    found = set(stacks.values())
    if len(found) > 1:
        listed = "; ".join(f"{kernel}: {stack.describe()}" for kernel, stack in stacks.items())
        raise TablesError(
            f"the kernel tables of GPU class {class_id} were certified with different compiler "
            f"stacks ({listed}); re-certify them on one stack"
        )
    return found.pop() if found else None


def running_stack() -> Stack:
    """The torch and Triton this process runs, each as its installed distribution names it
    (:func:`installed_version`)."""
    import torch
    import triton

    return Stack(installed_version(torch), installed_version(triton))


def installed_version(module: Any) -> str:
    """The version of the installed distribution whose files hold ``module``'s package (its ``RECORD`` lists the
    package's ``__init__.py`` beside its ``.dist-info``), not the ``__version__`` the module states: a Triton built
    from source at any commit states the release it grew from (``triton.__version__`` is ``3.6.0`` in its source
    tree; its build is the distribution ``3.6.0+git<commit>``), and a program may set ``__version__`` itself.
    CompilerStackError when no installed distribution holds the module: a source tree on the path, an editable
    install (its package lies outside the folder of its record) or a module a program put in ``sys.modules``, whose
    code no version names."""
    from importlib import metadata

    name = str(getattr(module, "__name__", module))
    origin = getattr(module, "__file__", None)
    init = Path(origin).resolve() if isinstance(origin, str) else None
    others: list[str] = []  # distributions whose record lists the package with another file than the one imported
    if init is not None and init.name == "__init__.py" and init.parent.name == name:
        site = [str(init.parent.parent)]
        # the distribution of the package's own name first (one RECORD read), then any other (pytorch-triton's)
        for named, dists in (
            (True, metadata.distributions(name=name, path=site)),
            (False, metadata.distributions(path=site)),
        ):
            for dist in dists:
                record = dist.read_text("RECORD")
                if record is None and named:
                    return str(dist.version)  # an installer that kept no record: the distribution of the package's name
                listed = _record_line(record, f"{name}/__init__.py") if record is not None else None
                if listed is None:
                    continue
                # a record left behind (an install interrupted, another version's files copied over it, pytorch-triton
                # and triton in one folder) lists the package too: the one whose hash is the imported file's holds it
                if _hash_matches(listed, init):
                    return str(dist.version)
                others.append(f"{dist.metadata['Name']} {dist.version}")
    stated = getattr(module, "__version__", None)
    if others:
        raise CompilerStackError(
            f"the {name} this process imported ({origin}, stating version {stated}) is not the one its installed "
            f"record says: {', '.join(dict.fromkeys(others))} lists another {name}/__init__.py (files of another "
            f"install over it, or a record an interrupted install left): which version runs, nothing says. Reinstall "
            f"{name} with pip (pip install --force-reinstall --no-deps {name}=={stated}; nothing was loaded)."
        )
    raise CompilerStackError(
        f"the {name} this process imported ({origin or 'no file'}, stating version {stated}) is not one an installed "
        f"distribution holds (a source tree on the path, an editable install, or a module a program put in its "
        f"place): its version cannot say which code it is, so no certified stack can be matched to it. Install "
        f"{name} with pip (nothing was loaded)."
    )


def _record_line(record: str, path: str) -> str | None:
    """The line of a wheel's ``RECORD`` that lists ``path`` (``path,<algorithm>=<digest>,<size>``), or None."""
    start = f"\n{record}".find(f"\n{path},")
    if start < 0:
        return None
    end = record.find("\n", start)
    return record[start : end if end >= 0 else len(record)]


def _hash_matches(line: str, file: Path) -> bool:
    """Whether the file's bytes have the hash a ``RECORD`` line gives it (a line without one: nothing to hold it to)."""
    import base64
    import hashlib

    fields = line.rsplit(",", 2)
    mode, _, value = fields[1].partition("=") if len(fields) == 3 else ("", "", "")
    if not value:
        return True
    try:
        digest = hashlib.new(mode, file.read_bytes()).digest()
    except (OSError, ValueError):  # unreadable, or a hash hashlib does not know: not shown to be the one listed
        return False
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == value


def _major_minor(version: str) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found[1]), int(found[2])) if found else None


def release(version: str) -> Any:
    """``version`` as PEP 440 reads it (packaging's Version), or None when it is none (a build called "nightly")."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version)
    except InvalidVersion:
        return None


def compatible(certified: Stack, running: Stack) -> bool:
    """The rule: Triton exactly the certified version, torch the same major.minor. A patch release of that torch
    keeps its Triton-facing side; a pre-release or development build does not count as one (``2.11.0a0+git...``, a
    source build, and ``2.11.0.dev20260101``, a nightly, come before 2.11.0 and hold what its release may have
    changed; ``2.11.0rc1`` is not the release either): such a torch, running or certified, is the same stack only as
    the very version certified. A version PEP 440 cannot read is the same as none."""
    if running.triton != certified.triton:
        return False
    ran, made = release(running.torch), release(certified.torch)
    if ran is None or made is None:
        return False
    if ran.is_prerelease or made.is_prerelease:  # (packaging's is_prerelease covers .dev builds too)
        return running.torch == certified.torch
    return (ran.epoch, *ran.release[:2]) == (made.epoch, *made.release[:2])


def _torch_rule(certified: str) -> str:
    """What torch the rule admits beside ``certified``, in words."""
    made = release(certified)
    if made is None or made.is_prerelease:
        return f"{certified} exactly"
    return f"a {'.'.join(map(str, _major_minor(certified) or ()))}.x release (not a pre-release or development build)"


def pip_command(stack: Stack) -> str:
    """The pip command that installs ``stack``. A torch with a local build tag (``2.11.0+cu130``) comes
    from PyTorch's index for that build, which also carries Triton; a CPU build's index does not, so
    Triton then comes from PyPI in a second command."""
    public, _, build = stack.torch.partition("+")
    if not build:
        return f"python -m pip install torch=={public} triton=={stack.triton}"
    index = f"--index-url {PYTORCH_INDEX}/{build}"
    if build == "cpu":
        return f"python -m pip install torch=={public} {index} && python -m pip install triton=={stack.triton}"
    return f"python -m pip install torch=={public} triton=={stack.triton} {index}"


def check_command(class_id: str) -> str:
    prefix = "TRITON_INTERPRET=1 " if class_id == "interpreter" else ""
    return f"{prefix}python -m conformance check --class {class_id}"


# --- the local re-proof --------------------------------------------------------------------------


def reproof_path(class_id: str) -> Path:
    from .store import home

    return home() / "reproofs" / f"{class_id}.json"


def class_hashes(class_id: str, tables: Tables) -> dict[str, str]:
    """Every tracked file of the class (its class.yaml and kernel tables) -> its sha256 (TRACKED.yaml)."""
    return {f.path: f.sha256 for f in tables.tracked if f.path.startswith(f"{class_id}/")}


def write_reproof(
    class_id: str, tables: Tables, stack: Stack, check: dict[str, Any], device: str, command: str
) -> Path:
    """Record that the class's tables, as tracked now, passed a whole check on ``stack``."""
    from . import __version__

    certified = certified_stack(class_id, tables)
    record = {
        "format": REPROOF_FORMAT,
        "class": class_id,
        "stack": stack.as_dict(),
        "certified_stack": certified.as_dict() if certified else None,
        "tables": class_hashes(class_id, tables),
        "kernels": kernels_digest(),
        "triton_build": triton_build(),
        "check": check,
        "device": device,
        "neurobrix": __version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
    }
    path = reproof_path(class_id)
    # named by pid and a random part: two checks on one home (a volume two containers share) may have one pid, each its
    # container's process 1, and then wrote one scratch file (the first's rename failed, "could not be written")
    scratch = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}")
    # made closed to other users' writing (planted round 43: under `umask 000` the reproofs folder was 0777 and the
    # record 0666, and any user could put there a record admitting a stack no check had passed for this user's runs)
    made = [above for above in path.parents if not above.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        for written in (*made, scratch):
            os.chmod(written, stat.S_IMODE(written.stat().st_mode) & ~stat.S_IWOTH)
        os.replace(scratch, path)  # whole or absent, never half-written
    except BaseException as exc:
        # a full disk or a read-only home (or Ctrl-C) left the half-written scratch file behind and ended the check
        # that had passed in "No space left on device" alone, naming no file
        scratch.unlink(missing_ok=True)
        if not isinstance(exc, OSError):
            raise
        from .store import HOME_ENV, StoreError

        raise StoreError(
            f"the check passed, but its re-proof could not be written to {path}: {exc.strerror or exc}; nothing was "
            f"recorded. Free space there (or point {HOME_ENV} at a folder you can write) and run the check again"
        ) from exc
    return path


def reproof_problem(class_id: str, tables: Tables, running: Stack) -> str | None:
    """Why the class's local re-proof does not cover this run (None: it does). No file is a problem too."""
    path = reproof_path(class_id)
    if not path.is_file():
        return "no re-proof recorded"
    try:
        from .checkpoint import load_json  # (an integer past a float's range refused: strict round 60)

        record = load_json(path.read_text(encoding="utf-8"))
        found = record.get("format") if isinstance(record, dict) else None
        if type(found) is int and found != REPROOF_FORMAT:  # another NeuroBrix's: named before its fields are read
            by = "a newer" if found > REPROOF_FORMAT else "an older"
            return (
                f"the re-proof {path} is format {found}, and this NeuroBrix reads format {REPROOF_FORMAT} "
                f"(written by {by} NeuroBrix): run the check again with this one to record its own"
            )
        recorded = Stack(str(record["stack"]["torch"]), str(record["stack"]["triton"]))
        hashes = record["tables"]
        if record.get("format") != REPROOF_FORMAT or record.get("class") != class_id or not isinstance(hashes, dict):
            raise ValueError("not a re-proof of this class in this format")
        # 1.0 and true equal the format 1; versions of another type (2.13, a list) were read as their str()
        if type(record["format"]) is not int or not all(
            isinstance(record["stack"][k], str) for k in ("torch", "triton")
        ):
            raise ValueError("its format is not an integer or its stack's versions are not texts")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:  # RecursionError: JSON nested too deep
        return f"the re-proof {path} is unreadable ({exc})"
    check = record.get("check")
    if not isinstance(check, dict) or check.get("passed") is not True:
        return f"the re-proof {path} does not record a passing check of the class"
    if recorded != running:
        return f"the re-proof {path} was made on {recorded.describe()}, not this stack"
    if record.get("triton_build") != triton_build():
        # the same version, another build of it (a re-proof copied from another machine, Triton reinstalled from
        # another build, or a re-proof written before builds were recorded): another compiler than the one checked
        return (
            f"the re-proof {path} is stale: it checked another build of Triton {recorded.triton} than this one "
            "(Triton's own hash of its compiler, triton_key, differs: a re-proof copied from another machine, Triton "
            "reinstalled from another build, or one recorded before builds were)"
        )
    now = class_hashes(class_id, tables)
    changed = sorted(p for p in set(now) | set(hashes) if now.get(p) != hashes.get(p))
    if changed:
        return f"the re-proof {path} is stale: the tables changed since ({', '.join(changed)})"
    if record.get("kernels") != kernels_digest():
        # the same tables and stack, other kernels (neurobrix upgraded, a checkout changed): other code from a setting
        version = record.get("neurobrix")
        made = f"neurobrix {version}" if isinstance(version, str) else "another neurobrix"
        return (
            f"the re-proof {path} is stale: it checked the kernels of {made}, and this neurobrix's kernels "
            "(neurobrix/ops) are others"
        )
    return None


def triton_build() -> str:
    """The sha256 of Triton's own key for its build (``triton_key``: the version and the hashes of its frontend,
    compiler, backends, ``libtriton`` and language files), which Triton puts in every compiled kernel's cache key:
    two installs of one version compile the same code exactly when it is the same. A version alone does not say it
    (a source build at another commit, or another distribution's build, states the release it grew from). Hashes
    libtriton (about half a gigabyte) once per process, as Triton's first compile does anyway (cached by Triton)."""
    import hashlib

    from triton.runtime import cache

    if not hasattr(cache, "triton_key"):  # (a Triton older than any a class certifies kept it in its compiler)
        from triton.compiler import compiler as cache
    return hashlib.sha256(str(cache.triton_key()).encode()).hexdigest()


def kernels_digest() -> str:
    """The sha256 of this neurobrix's kernels (the sources of ``neurobrix/ops`` it imports, ``neurobrix.ops.SOURCES``,
    each file's name and bytes): what Triton compiles a setting with, beside the setting itself. A re-proof checked
    these kernels and no others."""
    import hashlib

    from .ops import SOURCES

    digest = hashlib.sha256()
    for name in sorted(SOURCES):
        path = Path(__file__).resolve().parent / "ops" / name
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


_NOTED: set[tuple[str, str]] = set()  # the notes sources_pending gave this process


def _unbound(class_id: str, tables: Tables) -> tuple[list[str], list[str]]:
    """(the class's tables proven on other code or on none, each described; those of them AWAITING_REPROOF and bound
    to no code, by kernel name)."""
    stale, pending = [], []
    ours = declared_kernels()  # (a retired kernel's table launches nothing: no code to bind it to)
    for name in tables.kernels(class_id):
        index = tables.index(class_id, name)
        if index is None or name not in ours:
            continue
        recorded = index.stack.get("source")
        if recorded == kernel_source(name):
            continue
        if recorded is None and (class_id, name) in AWAITING_REPROOF:
            pending.append(name)
        else:
            stale.append(f"{name} (proven on {recorded})" if recorded else f"{name} (bound to no kernel source)")
    return stale, pending


def sources_pending(class_id: str, tables: Tables) -> str | None:
    """The note a run of the class prints while some of its shipped tables await their re-proof (AWAITING_REPROOF)."""
    pending = _unbound(class_id, tables)[1]
    if not pending:
        return None
    return (
        f"note: the {class_id} settings of {', '.join(pending)} were proven before proofs were bound to their kernel's "
        f"code and have not been re-proven on this code yet (each of this class's other tables has); the next "
        f"re-proof: python -m conformance check --class {class_id} --kernel {' '.join(pending)} --record"
    )


def sources_problem(class_id: str, tables: Tables) -> str | None:
    """Why the class's settings were not proven on this neurobrix's kernels (None: each kernel table's proofs were
    made on the code of its kernel as it is here, or await their re-proof: :data:`AWAITING_REPROOF`). A table whose
    index records no source was proven before proofs were bound to their kernel's code, or on code edited since."""
    stale = _unbound(class_id, tables)[0]
    if not stale:
        return None
    kernels = [s.partition(" ")[0] for s in stale]
    return (
        f"the settings of GPU class {class_id} for {', '.join(stale)} were not proven on this neurobrix's kernels "
        f"(the code in neurobrix/ops digests otherwise): a kernel edited after its settings were proven runs code no "
        f"check has seen. Prove them on this code (from a source checkout, on a device of the class): "
        f"python -m conformance check --class {class_id} --kernel {' '.join(kernels)} --record"
    )


def installed_kernels_problem(package: Path | None = None) -> str | None:
    """Why this neurobrix's kernels are not the ones its wheel installed (None: they are, or no wheel installed them).
    An install from a wheel lists each file with its hash in the ``RECORD`` of its ``.dist-info`` beside the package
    (``package``: the folder of neurobrix, by default this one's); a kernel source (``neurobrix.ops.SOURCES``) patched
    in site-packages after that is other code than the release's, whose settings the shipped tables prove. A source
    checkout, or an editable install (whose RECORD lists no module of the package), has no such list: its kernels are
    the checkout's, as they are. A few small files hashed, once for each run."""
    from importlib import metadata

    from .ops import SOURCES

    package = package if package is not None else PACKAGE
    site = package.parent
    found: list[str] = []
    for dist in metadata.distributions(name="neurobrix", path=[str(site)]):
        listed = {str(f).replace("\\", "/"): f for f in dist.files or () if f.hash is not None}
        if f"{package.name}/__init__.py" not in listed:
            continue  # an editable install's or another folder's record: not of these files
        changed = []
        for name in SOURCES:
            entry = listed.get(f"{package.name}/ops/{name}")
            path = package / "ops" / name
            if entry is None or entry.hash is None:
                changed.append(f"{package.name}/ops/{name} (not installed by it)")
                continue
            try:
                digest = record_digest(entry.hash.mode, path.read_bytes())
            except (OSError, ValueError) as exc:  # unreadable, or a hash pip does not check RECORD rows with
                changed.append(f"{package.name}/ops/{name} ({exc})")
                continue
            if digest != entry.hash.value:
                changed.append(f"{package.name}/ops/{name} (changed since)")
        if not changed:
            return None  # (of two records of the package, one that these files match is the install's)
        record = getattr(dist, "_path", None)
        found.append(
            f"this neurobrix's kernels are not those its wheel installed ({record / 'RECORD' if record else 'RECORD'}"
            f", neurobrix {dist.version}): {', '.join(changed)}. The certified settings were proven on the kernels "
            f"the release shipped, not on these; reinstall it (pip install --force-reinstall --no-deps "
            f"neurobrix=={dist.version}), or run changed kernels from a source checkout"
        )
    return found[0] if found else None


# --- the verdict ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    class_id: str
    certified: Stack | None  # None: the class has no kernel tables (preflight names what is missing)
    running: Stack
    reproof: Path | None = None  # the local re-proof that admits this stack, if that is what admits it
    problem: str | None = None  # why the re-proof does not admit it, when the stack differs

    @property
    def ok(self) -> bool:
        return self.certified is None or compatible(self.certified, self.running) or self.reproof is not None

    def describe(self) -> str:
        if self.certified is None:
            return f"class {self.class_id} has no kernel tables"
        if compatible(self.certified, self.running):
            return f"{self.running.describe()}; certified with {self.certified.describe()}"
        if self.reproof is not None:
            return (
                f"{self.running.describe()}, re-proved here ({self.reproof}); certified with "
                f"{self.certified.describe()}"
            )
        return self.refusal()

    def refusal(self) -> str:
        certified = self.certified or self.running  # (a class without kernel tables is never refused)
        lines = [
            f"GPU class {self.class_id} was certified with {certified.describe()}; this machine runs "
            f"{self.running.describe()}. Its settings were proven on the code that stack compiles from them, "
            f"so they are not run on another (Triton must be {certified.triton} exactly, torch "
            f"{_torch_rule(certified.torch)}; nothing was loaded).",
            f"  Install the certified stack:\n    {pip_command(certified)}",
            f"  Or re-prove the class on this stack (from a source checkout of neurobrix, on this machine):\n"
            f"    {check_command(self.class_id)}\n"
            f"  A check that passes records a local re-proof ({reproof_path(self.class_id)}) that run accepts for "
            "exactly this torch and Triton and these tables. It proves the settings correct on this stack, not "
            "that they are the fastest here.",
        ]
        if self.problem and self.problem != "no re-proof recorded":
            lines.append(f"  ({self.problem}.)")
        return "\n".join(lines)


def verdict(class_id: str, tables: Tables | None = None, running: Stack | None = None) -> Verdict:
    loaded = tables if tables is not None else load()
    certified = certified_stack(class_id, loaded)
    running = running if running is not None else running_stack()
    if certified is None or compatible(certified, running):
        return Verdict(class_id, certified, running)
    problem = reproof_problem(class_id, loaded, running)
    return Verdict(
        class_id, certified, running, reproof=reproof_path(class_id) if problem is None else None, problem=problem
    )


# Variables read by Triton's Python side that change the code it compiles from a setting, or replace it
# (kernel overrides, another ptxas or libdevice, another target, instrumentation, debug mode's device asserts
# and integer overflow checks), or that hand Triton its binaries from elsewhere (a cache manager or remote cache
# backend class the environment names: Python code imported by Triton, serving whatever it holds under a
# kernel's key), or its compiler and driver (TRITON_DEFAULT_BACKEND: a backend by name, read outside its
# knobs). Refused whatever the installed Triton's knobs say: the floor under the allow-list below.
CODEGEN_ENV = (
    "TRITON_KERNEL_OVERRIDE",
    "TRITON_SWAP_MIR",
    "TRITON_DEBUG",
    "TRITON_OVERRIDE_ARCH",
    "PTXAS_OPTIONS",
    "DISABLE_PTXAS_OPT",
    "TRITON_PTXAS_PATH",
    "TRITON_PTXAS_BLACKWELL_PATH",
    "TRITON_LIBDEVICE_PATH",
    "TRITON_F32_DEFAULT",
    "TRITON_MOCK_PTX_VERSION",
    "TRITON_ENABLE_ASAN",
    "TRITON_INSTRUMENTATION_MODE",
    "TRITON_PLUGIN_PATHS",
    "LLVM_PASS_PLUGIN_PATH",
    "TRITON_CACHE_MANAGER",
    "TRITON_REMOTE_CACHE_BACKEND",
    "TRITON_DEFAULT_BACKEND",
)

# Variables the CUDA driver reads that make it load other code than the binary Triton compiled: with either set,
# the driver ignores a module's machine code and compiles its PTX itself (Triton loads a cubin of machine code, which
# holds no PTX: the certified kernel fails to load after the weights were loaded, or, given PTX, runs the driver's
# code, not the one proven). Strict round 59; the driver's other variables are harmless to a kernel's numbers
# (docs/strictness-rounds.md, round 59).
DRIVER_CODEGEN_ENV = ("CUDA_FORCE_PTX_JIT", "CUDA_FORCE_JIT")

# The variables Triton reads that a GPU class may run with, each changing neither the code Triton compiles from
# a setting nor the binary it launches. Every other variable Triton reads refuses a GPU class when set: each of
# its knobs (``triton.knobs``, every group), each one its compiler lists as changing what it compiles, and
# CODEGEN_ENV. An allow-list rather than a deny-list: a variable a later Triton adds, or one misread here, is
# refused until someone reads what it does and lists it, which costs a user one line telling which variable to
# unset; a deny-list would let it through silently, and the kernel run would no longer be the one proven.
HARMLESS_ENV = {
    "TRITON_INTERPRET": "whether Triton interprets: that is the interpreter class (neurobrix.gpu)",
    "TRITON_HOME": "where Triton's folders are",
    "TRITON_CACHE_DIR": "where Triton keeps its binaries (each under a hash of source, setting, compiler, options)",
    "TRITON_DUMP_DIR": "where dumps would go; a dump itself is refused",
    "TRITON_OVERRIDE_DIR": "read only with TRITON_KERNEL_OVERRIDE, which is refused",
    "TRITON_ALWAYS_COMPILE": "compiles again instead of reading the cache: the same code",
    "TRITON_STORE_BINARY_ONLY": "which intermediate files the cache keeps beside each binary",
    "TRITON_LIBCUDA_PATH": "where the CUDA driver library is, when the loader's path does not say",
    "TRITON_CUOBJDUMP_PATH": "a disassembler, run only to show a binary",
    "TRITON_NVDISASM_PATH": "a disassembler, run only to show a binary",
    "CC": "the C compiler of Triton's host-side helpers, built from Triton's own C source, not of a kernel",
}
HARMLESS_GROUPS = {
    "autotuning": "the autotuner's cache and printing: the engine has no autotuner",
    "proton": "Triton's profiler, which reads counters and compiles nothing",
    "redis": "read only by the Redis cache backend, which TRITON_REMOTE_CACHE_BACKEND would name (refused)",
}
# Python-side hooks of triton.knobs.runtime that change what runs: stages added to the compiler's pipeline, and
# a hook that may skip a kernel's compile and launch (its launch returns nothing). The others only observe.
CODEGEN_HOOKS = ("add_stages_inspection_hook", "jit_cache_hook")


def _triton_knobs() -> tuple[dict[str, str], dict[str, str]]:
    """(every environment variable Triton's knobs read -> its group, knobs set from Python -> their value),
    empty for a Triton without ``triton.knobs``. Reads no knob's value (a tool's knob runs the tool)."""
    try:
        from triton import knobs
    except ImportError:
        return {}, {}
    read: dict[str, str] = {}
    set_here: dict[str, str] = {}
    base = getattr(knobs, "base_knobs", None)
    for group_name, group in sorted(vars(knobs).items()):
        if base is None or not isinstance(group, base):
            continue
        for name, descriptor in group.knob_descriptors.items():
            read[descriptor.key] = group_name
            if name in vars(group) and group_name not in HARMLESS_GROUPS and descriptor.key not in HARMLESS_ENV:
                set_here[f"triton.knobs.{group_name}.{name}"] = repr(vars(group)[name])
        if group_name == "runtime":
            for hook in CODEGEN_HOOKS:
                if getattr(group, hook, None) is not None:
                    set_here[f"triton.knobs.runtime.{hook}"] = repr(getattr(group, hook))
    return read, set_here


def _foreign_backends() -> dict[str, str]:
    """Triton's backends for NVIDIA and AMD GPUs that another installed package provides: Triton takes its
    backends from the ``triton.backends`` entry points, a later one of a name replacing Triton's own (its
    compiler and its driver are then that package's code). Backend name -> the modules it comes from."""
    try:
        from triton.backends import backends
    except ImportError:
        return {}
    found = {}
    for name in ("nvidia", "amd"):
        backend = backends.get(name)
        if backend is None:
            continue
        modules = (backend.compiler.__module__, backend.driver.__module__)
        if modules != (f"triton.backends.{name}.compiler", f"triton.backends.{name}.driver"):
            found[f"triton.backends[{name!r}]"] = " and ".join(modules)
    return found


def compiler_overrides() -> dict[str, str]:
    """What makes Triton compile other code from a setting than it does by default, or launch other code: the
    variables set here that Triton reads and :data:`HARMLESS_ENV` does not list (those its compiler reports
    itself, its knobs' and :data:`CODEGEN_ENV`), knobs set from Python (``triton.knobs.<group>.<name>``) and a
    GPU backend another package put in place of Triton's own (``triton.backends['nvidia']``)."""
    read, found = _triton_knobs()
    found.update(_foreign_backends())
    wanted = set(CODEGEN_ENV) | {
        key for key, group in read.items() if key not in HARMLESS_ENV and group not in HARMLESS_GROUPS
    }
    found.update({name: os.environ[name] for name in wanted if os.environ.get(name)})
    found.update({name: os.environ[name] for name in DRIVER_CODEGEN_ENV if os.environ.get(name, "0") != "0"})
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars
    except ImportError:  # a Triton without that list (none that a class certifies today)
        pass
    else:
        found.update({name: os.environ.get(name, value) for name, value in get_cache_invalidating_env_vars().items()})
    return dict(sorted(found.items()))


def require_certified_stack(class_id: str, tables: Tables | None = None) -> None:
    """Refuse (CompilerStackError) to run class ``class_id``'s settings with kernels other than those the installed
    wheel put in place (:func:`installed_kernels_problem`) or the files of ``neurobrix/ops`` hold
    (:func:`neurobrix.kernel_code.running_kernels_problem`: kernels changed in the process), on a stack they were
    not proven on, or with Triton told to compile them otherwise than it does by default (a GPU class: the
    interpreter compiles nothing); refuse (UsageError) a Triton cache folder named so that Triton cannot keep
    binaries in it, or keeps them in another folder from each folder a command runs in."""
    problem = installed_kernels_problem()
    if problem:
        raise CompilerStackError(f"{problem} (nothing was loaded).")
    found = verdict(class_id, tables)
    if not found.ok:
        raise CompilerStackError(*found.refusal().split("\n"))  # the lines it lays out, each printed
    problem = compiler_problem(class_id)
    if problem:
        raise CompilerStackError(f"{problem} (nothing was loaded).")
    problem = cache_problem(class_id)
    if problem:
        raise UsageError(f"{problem} (nothing was loaded).")
    # a local re-proof checked every entry on these kernels (its record holds their digest): it stands for the code
    loaded = tables if tables is not None else load()
    problem = None if found.reproof is not None else sources_problem(class_id, loaded)
    if problem:
        raise CompilerStackError(f"{problem} (nothing was loaded).")
    # the kernels imported in this process are the code of those files, not code a script or a .pth put in their place
    from .kernel_code import running_kernels_problem

    problem = running_kernels_problem()
    if problem:
        raise CompilerStackError(f"{problem} (nothing was loaded).")
    pending = None if found.reproof is not None else sources_pending(class_id, loaded)
    if pending and (class_id, pending) not in _NOTED:  # once a process for each class
        _NOTED.add((class_id, pending))
        print(pending, file=sys.stderr)
    if class_id != "interpreter":
        use_engine_cache()


# the variables naming Triton's cache folder, in the order Triton reads them: TRITON_CACHE_DIR, else TRITON_HOME's
# .triton/cache (HARMLESS_ENV lists both)
CACHE_ENV = ("TRITON_CACHE_DIR", "TRITON_HOME")
# the engine's own cache of compiled kernels, under NEUROBRIX_HOME, where neither variable names one
ENGINE_CACHE = "triton-cache"
# the TRITON_CACHE_DIR this process set to the engine's cache (None: none), told apart from one the user set
_ENGINE_CACHE_SET: list[str | None] = [None]


def engine_cache() -> Path | None:
    """The folder of the engine's own Triton cache, ``$NEUROBRIX_HOME/triton-cache`` (None where TRITON_CACHE_DIR or
    TRITON_HOME names Triton's cache: the user's choice stands).

    Triton's default cache (``~/.triton/cache``) is shared by every program of the user that compiles Triton kernels,
    and its key (source, setting, Triton's version, target) does not hold everything that changes a binary: a program
    that is not NeuroBrix's, run with ``TRITON_KERNEL_OVERRIDE`` or a compiler hook (what :func:`compiler_overrides`
    refuses here), stores its binary under the key a certified kernel's ``run`` later looks up, and Triton loads it
    without compiling. The engine's own folder is written only by processes that passed these checks."""
    if any(_named(name) is not None for name in CACHE_ENV):
        return None
    from .store import home

    return home() / ENGINE_CACHE


def _named(name: str) -> str | None:
    """The value of ``name`` (one of :data:`CACHE_ENV`) as the user set it: None where it is unset, or where it is
    the TRITON_CACHE_DIR :func:`use_engine_cache` set in this process (NEUROBRIX_HOME decides again: it may have
    changed)."""
    value = os.environ.get(name)
    return None if name == "TRITON_CACHE_DIR" and value is not None and value == _ENGINE_CACHE_SET[0] else value


def use_engine_cache() -> None:
    """Point Triton's cache at :func:`engine_cache` (where no variable names another) for the rest of this process:
    TRITON_CACHE_DIR, which Triton reads at every compile and load, and which the processes this one starts inherit.
    Called once the stack and the cache folder have passed their checks."""
    folder = engine_cache()
    if folder is not None:
        if not folder.exists():  # made here, closed to other users, not by Triton with the umask: under `umask 000`
            made = [above for above in folder.parents if not above.exists()]  # (NEUROBRIX_HOME, say)
            try:  # every user could write it (and the 0777 folders Triton makes in it), and the next run refused it
                folder.mkdir(parents=True, exist_ok=True)
                for above in made:
                    os.chmod(above, stat.S_IMODE(above.stat().st_mode) & ~stat.S_IWOTH)
                os.chmod(folder, stat.S_IMODE(folder.stat().st_mode) & ~stat.S_IRWXO)
            except OSError:
                pass  # Triton's first compile names the folder it cannot make (cache_problem checked it can)
        os.environ["TRITON_CACHE_DIR"] = _ENGINE_CACHE_SET[0] = str(folder)
    elif _ENGINE_CACHE_SET[0] is not None and os.environ.get("TRITON_CACHE_DIR") == _ENGINE_CACHE_SET[0]:
        del os.environ["TRITON_CACHE_DIR"]  # TRITON_HOME named since: Triton reads it, as was checked
        _ENGINE_CACHE_SET[0] = None


def cache_problem(class_id: str) -> str | None:
    """Why Triton's cache folder, as the environment names it, cannot serve class ``class_id``'s runs (None: it can;
    the interpreter class compiles nothing). Set but empty, TRITON_CACHE_DIR makes Triton's first compile fail
    ("Could not create or locate cache dir", a RuntimeError after the weights were loaded) and TRITON_HOME puts the
    cache in ./.triton/cache; a relative folder is another cache from each folder a command runs in, so the binaries
    ``neurobrix warmup`` compiled are not the ones ``run`` finds (the reason a relative NEUROBRIX_HOME is refused).
    Triton does not expand ``~`` in them either."""
    if class_id == "interpreter":
        return None
    for name in CACHE_ENV:
        value = _named(name)
        if value is None:
            continue
        if not os.path.isabs(value):  # Triton takes it as written: "~/cache" is a folder named ~ here
            said = f"{name} is set but empty" if value == "" else f"{name}={value} is a relative path"
            becomes = (
                "would be no folder (its first compile fails)"
                if name == "TRITON_CACHE_DIR" and value == ""
                else "would be another folder from each folder a command runs in"
            )
            return f"{said}: Triton's cache of compiled kernels {becomes}; give an absolute path, or unset it"
        break  # the first one set is the one Triton reads
    return _cache_folder_problem()


def _cache_folder_problem() -> str | None:
    """Why the folder Triton's cache lies in cannot be made or written (None: it can), named by the variable that
    places it: a TRITON_CACHE_DIR (or TRITON_HOME, or a home folder) that is a file, lies under one, or is not
    writable made Triton's first compile fail in os.makedirs (NotADirectoryError, PermissionError: one line naming a
    hashed sub-folder, exit 1) after the weights were loaded."""
    engine = engine_cache()
    if engine is not None:
        folder, named = str(engine), f"the engine's cache of compiled kernels {engine} (under NEUROBRIX_HOME)"
    elif _named("TRITON_CACHE_DIR"):
        folder = os.environ["TRITON_CACHE_DIR"]
        named = f"TRITON_CACHE_DIR={folder}"
    else:
        base = os.environ.get("TRITON_HOME") or os.path.expanduser("~/")
        folder = os.path.join(base, ".triton", "cache")
        named = (
            f"TRITON_HOME={os.environ['TRITON_HOME']} (its .triton/cache)"
            if os.environ.get("TRITON_HOME")
            else f"Triton's default cache folder {folder}"
        )
    try:
        return _cache_folder_state(folder, named)
    except OSError as exc:  # a name too long for the filesystem, a folder above it this user may not enter
        return (
            f"{named}: {exc.strerror}, so Triton cannot keep the kernels it compiles there (its first compile would "
            f"fail, after the weights were loaded); {_write_remedy()}"
        )


def _write_remedy() -> str:
    """What makes an unwritable cache folder writable: a variable names it (unset it, or name another), or it is the
    engine's own, which no variable names (make it one, or name another with TRITON_CACHE_DIR)."""
    if engine_cache() is None:
        return "point TRITON_CACHE_DIR at a folder you can write, or unset it"
    return "make it a folder you can write, or point TRITON_CACHE_DIR at one"


def _cache_folder_state(folder: str, named: str) -> str | None:
    probe = Path(folder)
    while not probe.exists() and not probe.is_symlink() and probe.parent != probe:  # the nearest that exists
        probe = probe.parent
    if not probe.is_dir():
        why = f"{probe} is not a folder" if probe != Path(folder) else "it is not a folder"
    elif not os.access(probe, os.W_OK | os.X_OK):
        why = f"{probe} cannot be written" if probe != Path(folder) else "it cannot be written"
    elif probe == Path(folder) and probe.stat().st_mode & stat.S_IWOTH:
        # Triton loads a binary it finds there under a kernel's key (a hash of public things: the source, the
        # setting, Triton's version, the target) without compiling: in a folder every user may write (/tmp, a
        # chmod 777 share) any of them can put one there first, and the certified setting would run that code
        return (
            f"{named}: every user of this machine can write it, so any of them can place a binary under the key of "
            "a certified kernel, which Triton then loads instead of compiling the kernel; point TRITON_CACHE_DIR at a "
            "folder of your own (or chmod o-w it)"
        )
    else:
        return _cache_owner_problem(Path(folder), probe, named)
    return (
        f"{named}: {why}, so Triton cannot keep the kernels it compiles there (its first compile would fail, after the "
        f"weights were loaded); {_write_remedy()}"
    )


def _cache_owner_problem(folder: Path, nearest: Path, named: str) -> str | None:
    """Why someone other than this user (and root) can decide what lies in Triton's cache folder ``folder``, whose
    nearest existing folder is ``nearest`` (None: no one can). Not there yet under a folder every user may write
    (TRITON_CACHE_DIR=/tmp/cache, sticky or not), another user makes it first, theirs, and fills it; a folder another
    user owns is theirs to fill; and in a folder above it that every user may write and that is not sticky, any of
    them can rename it away and put their own in its place. (Who may write the binaries inside the folder is
    Triton's to set: it makes them with the user's umask.)"""
    owners = {0, os.getuid()} if hasattr(os, "getuid") else None
    if owners is None:  # (no POSIX owners to compare: Windows)
        return None
    mode = nearest.stat()
    if nearest != folder and mode.st_mode & stat.S_IWOTH:
        return (
            f"{named}: it does not exist yet and {nearest} is writable by every user of this machine, so any of them "
            "can make it first, their own, and place a binary under the key of a certified kernel, which Triton then "
            "loads instead of compiling the kernel; point TRITON_CACHE_DIR at a folder of your own"
        )
    if nearest == folder and mode.st_uid not in owners:
        return (
            f"{named}: it belongs to another user (uid {mode.st_uid}), who can place a binary under the key of a "
            "certified kernel, which Triton then loads instead of compiling the kernel; point TRITON_CACHE_DIR at a "
            "folder of your own"
        )
    for above in nearest.absolute().parents:
        found = above.stat().st_mode
        if found & stat.S_IWOTH and not found & stat.S_ISVTX:
            return (
                f"{named}: {above} above it is writable by every user of this machine and not sticky, so any of them "
                "can rename the cache away and put a folder of their own, holding a binary under the key of a "
                "certified kernel, in its place; point TRITON_CACHE_DIR at a folder of your own"
            )
    return None


def require_runnable(class_id: str, tables: Tables | None = None, device: Any = None) -> None:
    """Refuse to launch class ``class_id``'s settings (from ``tables``, default the located ones) on this
    machine unless its device is of that class (UncertifiedGPUError: a setting proven on one GPU class is not
    run on another) and its stack and environment are the class's (CompilerStackError). What every way to the
    certified kernels passes through, the Python API's included (``neurobrix.plan.Plan.ops``)."""
    from .errors import DeviceError, UncertifiedGPUError
    from .gpu import detect_class, device_facts, interpreter_enabled
    from .ops import _common
    from .tables import is_loaded, was_loaded

    # the tables a plan was resolved from hold the class's device rule, its stack and its settings, each checked here
    # against them: tables a program built or replaced itself (Tables(...), dataclasses.replace) passed every check
    if tables is not None and not is_loaded(tables) and was_loaded(tables):
        raise UsageError(
            f"the tables in {tables.root} changed on disk since these settings were resolved from them (re-certified, "
            "or edited and re-tracked): what they certify now was not looked at. Resolve the plan again from "
            "neurobrix.tables.load() (nothing was launched)."
        )
    if tables is not None and not is_loaded(tables):
        where = f"for {tables.root}" if isinstance(tables, Tables) else f"(a {type(tables).__name__})"
        raise UsageError(
            f"these settings come from tables that neurobrix.tables.load did not give {where}: only tables verified "
            "against their TRACKED.yaml are launched, and a Tables built or replaced by a program (Tables(...), "
            "dataclasses.replace) is not. Plan from neurobrix.tables.load() (nothing was launched)."
        )
    loaded = tables if tables is not None else load()
    here = detect_class(loaded).id
    if here != class_id:
        raise UncertifiedGPUError(
            f"these settings are GPU class {class_id}'s and this machine's device is of class {here}: a setting "
            f"runs only on the class it was proven on. Plan for class {here} (nothing was launched)."
        )
    # Triton settles at import whether its kernels are interpreted: TRITON_INTERPRET changed since then makes the
    # class (read now, or when the device was first looked at) and the code that runs disagree
    said = {"the environment": interpreter_enabled(), "the kernels loaded": _common.INTERPRETER}
    said["the device found"] = device_facts().backend == "interpreter"
    if len(set(said.values())) > 1:
        shown = ", ".join(f"{who}: {'on' if on else 'off'}" for who, on in said.items())
        raise DeviceError(
            f"TRITON_INTERPRET changed while this program ran ({shown}): Triton decides when it is imported whether "
            "its kernels run in the interpreter, so the class and the code run would differ. Set TRITON_INTERPRET "
            "before the program starts (nothing was launched)."
        )
    require_class_device(here, device, loaded)
    require_certified_stack(class_id, loaded)


def require_class_device(class_id: str, device: Any, tables: Tables) -> None:
    """Refuse (UncertifiedGPUError) to launch on a GPU not of class ``class_id``: the class is found from the first
    GPU (device 0), and the kernels run on ``device`` (a torch.device), by default on torch's current device, which a
    program may have set to another (``torch.cuda.set_device(1)``, ``launch(..., device="cuda:1")``): on a machine of
    two kinds of GPU, one class's settings ran on the other kind."""
    from .errors import UncertifiedGPUError
    from .gpu import device_facts, facts_of, matches

    if device_facts().backend == "interpreter":
        return
    import torch

    if device is not None and getattr(device, "type", None) != "cuda":
        return  # a CPU device: no GPU class's kernel runs there (Triton refuses a CPU tensor on a GPU)
    index = getattr(device, "index", None)
    index = torch.cuda.current_device() if index is None else index
    if index == 0:
        return
    facts = facts_of(index)
    if not matches(tables.classes[class_id], facts):
        raise UncertifiedGPUError(
            f"the kernels would run on GPU {index} ({facts.describe()}), which is not of GPU class {class_id}, the "
            f"class of GPU 0 ({device_facts().describe()}): a setting runs only on the class it was proven on. Run on "
            "GPU 0, or list that GPU first in CUDA_VISIBLE_DEVICES (nothing was launched)."
        )


def compiler_problem(class_id: str) -> str | None:
    """Why this environment makes Triton compile other code from class ``class_id``'s settings than the code
    they were proven on (None: it does not; the interpreter class compiles nothing, and computes on this CPU's
    floats: :func:`subnormals_problem`)."""
    if class_id == "interpreter":
        return subnormals_problem()
    overrides = compiler_overrides()
    if not overrides:
        return None
    shown = ", ".join(f"{name}={value}" for name, value in overrides.items())
    which = "it" if len(overrides) == 1 else "them"
    return (
        f"this environment sets {shown}; with {which} Triton compiles other code from the certified settings "
        f"than the code class {class_id} was proven on. Unset {which} to run"
    )


def subnormals_problem() -> str | None:
    """Why this thread's CPU computes other float numbers than the interpreter class's proofs were made with (None:
    it does not): its flush-to-zero or denormals-are-zero mode (``torch.set_flush_denormal(True)``, or a library built
    with -ffast-math that set them when it was loaded) reads and makes every subnormal float 0, and the Triton
    interpreter computes each kernel with NumPy on this CPU's floats (the bounds the proofs hold allow for subnormals,
    not for their loss). A GPU class's kernels compute on the GPU, whatever the host's mode."""
    import numpy as np

    tiny = np.array([np.finfo(np.float32).tiny], dtype=np.float32)
    smallest = np.frombuffer(np.uint32(1).tobytes(), dtype=np.float32)  # the least subnormal, made by no arithmetic
    flushed = [
        name
        for name, value in (("flush-to-zero", tiny / np.float32(2)), ("denormals-are-zero", smallest * np.float32(1)))
        if value[0] == 0
    ]
    if not flushed:
        return None
    return (
        f"this process computes with the CPU's {' and '.join(flushed)} mode on (torch.set_flush_denormal(True), or a "
        "library built with -ffast-math that set it when it was loaded): every subnormal float is read or made as 0, "
        "and the Triton interpreter computes the kernels on this CPU's floats, so they would give other numbers than "
        "class interpreter was proven with. Turn it off (torch.set_flush_denormal(False)), or run without that library"
    )
