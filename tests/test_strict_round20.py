"""The twentieth round, adversarial on the strict runtime, about the code a certified setting runs on: a module left
in an installed neurobrix/ops (imported for being there, declaring or shadowing a kernel); a kernel's source patched
in site-packages after the wheel was installed; and a Triton cache folder every user of the machine can write. Each
test failed before the fix it names (the input accepted) and passes now; the controls pass either way. No kernel is
launched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO
from gate_fixtures import install_wheel, record_text

from neurobrix import ops, stack, tables
from neurobrix.errors import CompilerStackError

OPS = REPO / "neurobrix" / "ops"

# -- a module left in neurobrix/ops -------------------------------------------------------------------------------

STRAY = """
import dataclasses
from neurobrix.ops.linear import SPECS as _LINEAR
SPECS = tuple(dataclasses.replace(s, name={name!r}) for s in _LINEAR[:1])
IMPORTED = True
"""


@pytest.mark.parametrize("name", ["stray", "linear"], ids=["a-new-op", "an-op-of-the-engines"])
def test_a_module_left_in_the_ops_folder_is_not_imported(tmp_path, monkeypatch, name):
    """``neurobrix.ops`` imported every module it found in its folder: one that another tool, a distribution or a user
    left in an installed neurobrix/ops ran at every import and declared an op (a new one, in every ``Ops``), or one of
    the engine's names, which made every command fail ("declared twice", a traceback). Now only the modules the
    engine ships (``neurobrix.ops.MODULES``) are imported and the folder's others are left alone."""
    folder = tmp_path / "ops"
    shutil.copytree(OPS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "zz_left.py").write_text(STRAY.format(name=name))
    monkeypatch.setattr(ops, "__path__", [str(folder)])
    monkeypatch.delitem(sys.modules, "neurobrix.ops.zz_left", raising=False)
    found = ops._discover()
    assert "neurobrix.ops.zz_left" not in sys.modules
    assert found.keys() == ops.SPECS.keys() and found["linear"] is ops.SPECS["linear"]


def test_the_shipped_list_is_the_folders_op_modules():
    """The list the engine imports names every op module of the checkout and nothing else (a new kernel is added to
    it), and the kernels' digest is made of exactly the sources it imports."""
    modules = {p.stem for p in OPS.glob("*.py") if not p.name.startswith("_") and p.stem != "spec"}
    assert set(ops.MODULES) == modules
    assert set(ops.SOURCES) == {p.name for p in OPS.glob("*.py")}
    assert {spec.name for spec in ops.SPECS.values()} == set(ops.SPECS)


SHADOW = """
from pathlib import Path
__package__ = "neurobrix.ops"  # the kernel's own code, read from beside it: its relative imports as they are there
exec(compile((Path(__file__).parent.parent / "linear.py").read_text(), "linear.py", "exec"))
"""

IMPORT = """
import sys
try:
    import neurobrix.ops
except Exception as exc:
    print(type(exc).__name__, exc)
    sys.exit(getattr(exc, "exit_code", 1))
print("imported", neurobrix.ops.linear.__file__)
"""


def test_a_folder_shadowing_a_kernels_source_is_refused(tmp_path):
    """Python takes a package folder (or a compiled module) of a name before the source of that name: a
    ``neurobrix/ops/linear/`` left beside linear.py was imported as the linear kernel, code no proof covers and no
    digest hashed (``kernels_digest`` reads linear.py). Now importing the ops refuses it by name (exit 6)."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "neurobrix", site / "neurobrix", ignore=shutil.ignore_patterns("__pycache__"))
    shadow = site / "neurobrix" / "ops" / "linear"
    shadow.mkdir()
    (shadow / "__init__.py").write_text(SHADOW)
    env = {**os.environ, "PYTHONPATH": str(site), "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", IMPORT], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 6, done.stdout + done.stderr
    assert done.stdout.startswith("CompilerStackError neurobrix.ops.linear was imported from ")
    assert f"{shadow / '__init__.py'}, not from its source" in done.stdout


# -- a kernel's source patched after the wheel was installed ------------------------------------------------------


def _installed(tmp_path: Path) -> Path:
    """This neurobrix's package root and kernels, installed from a wheel by ``installer`` (PyPA's installer, the one
    that writes the RECORD pip writes) into a site folder of their own: the package folder there."""
    names = ["neurobrix/__init__.py", *(f"neurobrix/ops/{p.name}" for p in sorted(OPS.glob("*.py")))]
    members = [(name, (REPO / name).read_bytes()) for name in names]
    info = "neurobrix-0.1.0.dist-info"
    members += [
        (f"{info}/METADATA", b"Metadata-Version: 2.1\nName: neurobrix\nVersion: 0.1.0\n"),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    members.append((f"{info}/RECORD", record_text(members, f"{info}/RECORD")))
    wheel = tmp_path / "neurobrix-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in members:
            archive.writestr(name, data)
    install_wheel(wheel, tmp_path / "site")
    return tmp_path / "site" / "neurobrix"


@pytest.mark.parametrize("how", ["patched", "removed"])
def test_a_kernel_patched_after_the_install_is_refused(tmp_path, monkeypatch, how):
    """The tables are verified against their TRACKED.yaml on every load; the kernels beside them were not: a user (or
    a tool) patching site-packages/neurobrix/ops/linear.py after ``pip install`` ran the certified settings on code no
    proof was made on (exit 0). The wheel's RECORD says what was installed: a kernel source of another hash (or one
    RECORD lacks) is refused now by name (exit 6); as installed (control) it runs."""
    package = _installed(tmp_path)
    monkeypatch.setattr(stack, "PACKAGE", package, raising=False)
    stack.require_certified_stack("interpreter", tables.load())  # control: as installed
    source = package / "ops" / "linear.py"
    if how == "patched":
        source.write_text(source.read_text().replace("BLOCK_K", "BLOCK_K ", 1))
        said = "neurobrix/ops/linear.py (changed since)"
    else:
        record = package.parent / "neurobrix-0.1.0.dist-info" / "RECORD"
        record.write_text("".join(r for r in record.read_text().splitlines(True) if "ops/linear.py" not in r))
        said = "neurobrix/ops/linear.py (not installed by it)"
    with pytest.raises(CompilerStackError, match="kernels are not those its wheel installed") as refused:
        stack.require_certified_stack("interpreter", tables.load())
    assert refused.value.exit_code == 6 and said in str(refused.value)
    assert "pip install --force-reinstall --no-deps neurobrix==0.1.0" in str(refused.value)


def test_a_checkout_or_an_editable_install_has_no_record_to_hold_its_kernels_to(tmp_path):
    """Controls: a source checkout (no .dist-info beside the package) and a folder whose RECORD lists none of the
    package's modules (an editable install's lists a .pth) are their kernels as they are."""
    assert stack.installed_kernels_problem(REPO / "neurobrix") is None
    package = _installed(tmp_path)
    record = package.parent / "neurobrix-0.1.0.dist-info" / "RECORD"
    record.write_text("_editable_impl_neurobrix.pth,sha256=AAAA,1\n")
    (package / "ops" / "linear.py").write_text("# patched in a checkout\n")
    assert stack.installed_kernels_problem(package) is None


# -- a Triton cache folder every user can write -------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o777, 0o1777], ids=["world-writable", "world-writable-sticky"])
def test_a_triton_cache_every_user_can_write_is_refused(tmp_path, monkeypatch, mode):
    """Triton loads a binary found in its cache under a kernel's key (a hash of public things) instead of compiling:
    with TRITON_CACHE_DIR a folder every user may write (/tmp itself, a share made 777; sticky or not, another user
    creates the key's folder first), any user could place the code a certified setting runs. Now a GPU class refuses
    it (exit 2 from run); a folder only its owner writes (control) serves."""
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    cache.chmod(0o755)
    assert stack.cache_problem("fake-gpu") is None
    cache.chmod(mode)
    problem = stack.cache_problem("fake-gpu")
    assert problem is not None and problem.startswith(f"TRITON_CACHE_DIR={cache}: every user of this machine")
    assert stack.cache_problem("interpreter") is None  # the interpreter compiles nothing
