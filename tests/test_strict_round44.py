"""The forty-fourth round: records the engine trusts that are consistent with themselves but belong to something else.

Round 43 found a stored model's folder holding another model's files. This round hunted the same class in every other
record a command trusts: the Hugging Face cache snapshot an import reads, the warmup's output, local re-proofs, the
tables folder (NEUROBRIX_TABLES), a chat template folder, and the files of a stored model written after its import.

Found and fixed (one class):

- an HF cache snapshot holding another revision's or another repository's files. huggingface_hub writes a snapshot as
  a folder named by its commit (``models--org--a/snapshots/<commit>``), each file in it a link into the same
  repository's ``blobs``. A repository's cache folder that is a link to another repository's, a snapshot folder that
  is a link to another repository's snapshot (two repositories "shared" on disk), or to another commit of the same
  repository (``refs/main`` naming a commit whose folder links to an older one), or a file or template folder in it
  linking into another repository's cache, was imported offline (exit 0): the manifest and `list` recorded org/a at
  its commit for org/b's weights, config and tokenizer, and `run --model org/a` read them. Such a snapshot is refused
  at import now (exit 2, one line naming the link and where it leads, nothing stored). The repository's folder, or the
  whole cache, moved to another disk and linked back keeps its files its own and imports as before (controls), as does
  a link inside the repository that leads nowhere (round 43).

Held (looked at, harmless or covered): `neurobrix warmup` writes no record of its own (only Triton's cache, whose key
is the kernel's source, its setting and Triton's build: another model, dtype, class or tables version compiles or
finds other binaries); a re-proof is bound to its class, stack, Triton build, the class's tracked table bytes and the
kernels' digest (rounds 34-42), so one copied from another class, machine or tables version is stale; a tables class
folder copied under another class's name is refused by class.yaml's ``class`` (it must be its folder's), an index or
a proof record of another kernel or class by its header, a proof record of another index by its rows' digests; a
chat template folder and every file `run` reads from a stored model are the manifest's (rounds 21, 40, 43), and no
command writes into a model's folder after its import.

Left open: a blob of the repository's own cache whose bytes are not those its name (the file's sha256, or git's blob
hash) says is imported as it is (the import hashes every file anyway, so checking LFS blobs' names costs nothing, but
whether every hub and mirror names blobs by content was not settled here); a tables folder given by NEUROBRIX_TABLES
is not bound to the kernels it was certified with (certified indexes record no kernels digest: binding them is a
format change and a re-certification of every class, the nvidia-h200 one on its GPU).

Each test that says "before" failed before the fix (run in a worktree of the round's base commit); the controls pass
either way."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from store_fixtures import make_checkpoint, populate_hub_cache

from neurobrix import hub


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    from safetensors.torch import load_file, save_file

    root = tmp_path_factory.mktemp("strict44")
    a, b = make_checkpoint(root / "a"), make_checkpoint(root / "b")
    weights = load_file(b / "model.safetensors")  # org/b: the same architecture, other weights
    save_file({k: (v * 2).contiguous() for k, v in weights.items()}, b / "model.safetensors", metadata={"format": "pt"})
    return {"a": a, "b": b}


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from neurobrix.cli import main

    try:
        code = main(list(argv))
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


A, B, OLD = "a" * 40, "b" * 40, "1" * 40


def _link(path: Path, target: Path) -> None:
    os.symlink(os.path.relpath(target, path.parent), path)


def _lying_snapshot(how: str, checkpoints: dict[str, Path]) -> None:
    """org/a's cache, at refs/main = A, holding what is not org/a's commit A."""
    cache = hub.hub_cache()
    other = populate_hub_cache(cache, "org/b", checkpoints["b"], commit=B)
    repo = cache / "models--org--a"
    if how == "another repository's folder":  # models--org--a a link to models--org--b, refs/main naming B
        _link(repo, other.parent.parent)
        return
    if how == "another repository's snapshot":
        (repo / "snapshots").mkdir(parents=True)
        _link(repo / "snapshots" / A, other)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(A, encoding="utf-8")
        return
    own = populate_hub_cache(cache, "org/a", checkpoints["a"], commit=OLD if how == "another revision" else A)
    if how == "another revision":  # refs/main names A, whose folder is the older commit's
        _link(repo / "snapshots" / A, own)
        (repo / "refs" / "main").write_text(A, encoding="utf-8")
    elif how == "another repository's weights":
        (own / "model.safetensors").unlink()
        _link(own / "model.safetensors", (other / "model.safetensors").resolve())
    elif how == "another repository's template folder":
        folder = other / "additional_chat_templates"
        folder.mkdir()
        (folder / "tool_use.jinja").write_text("{{ messages }}", encoding="utf-8")
        _link(own / "additional_chat_templates", folder)
    else:
        raise AssertionError(how)


@pytest.mark.parametrize(
    "how",
    [
        "another repository's folder",
        "another repository's snapshot",
        "another revision",
        "another repository's weights",
        "another repository's template folder",
    ],
)
def test_a_snapshot_holding_what_is_not_its_own_is_refused_at_import(checkpoints, capsys, how):
    """Before: exit 0, org/a stored at commit A with org/b's (or the older commit's) files."""
    _lying_snapshot(how, checkpoints)
    code, out, err = _cli(capsys, "import", "org/a")
    lines = err.strip().splitlines()
    assert code == 2, (out, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    commit = B if how == "another repository's folder" else A  # (refs/main read through the link)
    assert f"the Hugging Face cache's snapshot of org/a at {commit[:12]}" in err, err
    assert "is a link to" in err or "from outside its repository's cache folder" in err, err
    assert "run the import again" in err
    code, out, _ = _cli(capsys, "list")
    assert code == 0 and "no models imported yet" in out, out  # nothing stored


def test_the_refusal_names_where_the_link_leads(checkpoints, capsys):
    _lying_snapshot("another repository's weights", checkpoints)
    code, _, err = _cli(capsys, "import", "org/a")
    assert code == 2
    assert "holds model.safetensors" in err and "models--org--b" in err, err


@pytest.mark.parametrize("moved", ["the repository's folder", "the whole cache"])
def test_a_cache_moved_elsewhere_and_linked_back_still_imports(checkpoints, tmp_path, capsys, moved):
    """Control: the files are the repository's own wherever its folder lies."""
    cache = hub.hub_cache()
    populate_hub_cache(cache, "org/a", checkpoints["a"], commit=A)
    elsewhere = tmp_path / "other-disk"
    elsewhere.mkdir()
    source = cache / "models--org--a" if moved == "the repository's folder" else cache
    shutil.move(str(source), str(elsewhere / source.name))
    os.symlink(elsewhere / source.name, source)
    code, out, err = _cli(capsys, "import", "org/a")
    assert code == 0, err
    code, out, _ = _cli(capsys, "list")
    assert "org/a" in out and "aaaaaaaaaaaa" in out, out


def test_an_ordinary_snapshot_imports_and_runs(checkpoints, capsys):
    """Control: the layout huggingface_hub writes (files linked into the same repository's blobs)."""
    populate_hub_cache(hub.hub_cache(), "org/a", checkpoints["a"], commit=A)
    code, _, err = _cli(capsys, "import", "org/a")
    assert code == 0, err
    code, out, err = _cli(
        capsys, "run", "--model", "org/a", "--prompt", "hello", "--max-tokens", "2", "--backend", "torch"
    )
    assert code == 0, err
