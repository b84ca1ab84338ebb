"""Planted-bug round 40 (tests/planted40_plants.py, run one at a time by tests/planted40_driver.py, about 40 s for
this file on a 2-core machine): where no round planted before. What round 39 left (certify's ``plan``,
``provenance`` and ``write_table``, check's ``conforms``, hub.py's online paths ``_download``, ``_fetch`` and
``_from_cache``, driven here by a hub answering from canned listings, no network) and this session's new code: the
engine's Triton cache (stack.py's ``engine_cache``, ``_named``, ``use_engine_cache``, ``_cache_folder_problem``'s
engine branch; doctor.py's ``_cache_folder``), hub.py's blob check (strict round 45), store.py's lock, claims and the
sweep's aside handling (strict round 46), gate round 44's G602 (one file name in other bytes) and G408 (entry-point
names that are paths).

49 plants; 25 caught by the tests before the round (s01, the lock taken again inside its own thread, by a hang the
driver's 150 s limit ends). 24 survived: 22 now fail a test here (each checked against its plant alone, with
``--with tests/test_planted40.py::TEST ID``), 2 are equivalent:

- d01 (``name == "TRITON_CACHE_DIR"`` as ``name != "TRITON_HOME"`` in doctor's ``_cache_folder``): the name is one
  of CACHE_ENV's two.
- k01 (an out-of-memory error counted as starved after an example failed): Hypothesis's replay of the failure then
  passes, so it raises FlakyFailure, an Exception; with ``failing`` set the entry fails, not out of memory, and the
  report names the failing example (``failing[-1]``) either way.

Found and fixed: certify's ``provenance`` ran ``git status -- neurobrix conformance`` in conformance/, where git reads
the paths as conformance/neurobrix and conformance/conformance; no edit was ever seen, so a table certified from an
edited kernel or harness recorded a clean commit (plant c04, dropping ``conformance`` from that list, survived for
that reason). It runs from the folder above both now.

Pinned: the second download at the commit the first one got, not the branch again (h03); the single weights file over
an index (h01), the top folder's weights only (h02, h04); an "auto" gated model refused without --accept-license
(h05); the unreachable hub's advice and the command as given (h06, h07); a revision gone mid-download one line (h08);
a blob hashed past its first 16 MiB read, against sha256 and `git hash-object`, and the bar told the bytes read
(b02, b03); a linked scratch entry swept as a link (s05); a model put back under a gone organisation folder (s08);
`remove` sweeping first (s09); NEUROBRIX_SOURCE_COMMIT winning (c03), the PDL note only under PDL (c05), a model
outside the catalogue refused (c02), the table's order (c06) and its first entry held to `run` (c07); the worst
ratio the largest (k02), the examples counted up to the failure (k03), an edge shape at a domain's top checked
(k04).

Left open: the examples an entry reports include the failing one (``result.examples`` counts it before the verdict:
pinned as it is); ``_from_cache``'s "only partly" wording (IncompleteSnapshotError) and ``_download``'s OPTIONAL and
template lists got no plant."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from store_fixtures import make_checkpoint, populate_hub_cache

from neurobrix import hub, store

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    return tmp_path


# -- hub.py's online paths, driven by a hub answering from canned listings (no network) -----------------------------


def _listing(*names: str) -> SimpleNamespace:
    return SimpleNamespace(gated=False, sha=COMMIT, siblings=[SimpleNamespace(rfilename=n) for n in names])


@pytest.fixture
def downloads(isolated, monkeypatch):
    """hub._snapshot_download recorded (revision, patterns) and served from a checkpoint laid out as the cache is."""
    snapshot = populate_hub_cache(isolated / "hf" / "hub", "org/m", make_checkpoint(isolated / "m"), commit=COMMIT)
    calls: list[tuple[str | None, list[str]]] = []

    def snapshot_download(repo_id, *, revision, allow_patterns, local_files_only):
        calls.append((revision, list(allow_patterns)))
        return snapshot

    monkeypatch.setattr(hub, "_snapshot_download", snapshot_download)
    return calls


def test_a_repository_with_one_weights_file_and_an_index_takes_the_file_not_the_index(downloads):
    """Plant h01: transformers reads model.safetensors where both it and an index are there; the import took the
    index as well (first download, and the files stored), which the engine then read over the single file."""
    names = ["config.json", "tokenizer.json", "model.safetensors", "model.safetensors.index.json"]
    hub._download("org/m", None, _listing(*names))
    assert downloads[0][1] == ["config.json"]
    assert "model.safetensors.index.json" not in downloads[1][1] and "model.safetensors" in downloads[1][1]


def test_weights_in_a_subfolder_are_not_downloaded_with_the_top_ones(downloads):
    """Plant h02: the weights are the top folder's *.safetensors (as from_pretrained reads them); a subfolder's
    (original/, a second format) were downloaded too, gigabytes the import never reads. Re-anchored in text round 44,
    where top-level weights other than model.safetensors or an index's shards are refused before any download
    (from_pretrained loads no model from them): a subfolder's model.safetensors does not count as the top's."""
    names = ["config.json", "tokenizer.json", "weights.safetensors", "original/consolidated.safetensors"]
    with pytest.raises(hub.CheckpointError, match=r"\(weights.safetensors\) are neither model.safetensors"):
        hub._download("org/m", None, _listing(*names))
    names = ["config.json", "tokenizer.json", "weights.safetensors", "original/model.safetensors"]
    with pytest.raises(hub.CheckpointError, match="neither model.safetensors nor shards"):
        hub._download("org/m", None, _listing(*names))
    assert downloads == []
    hub._download(
        "org/m", None, _listing("config.json", "tokenizer.json", "model.safetensors", "original/x.safetensors")
    )
    assert "model.safetensors" in downloads[1][1]
    assert not [n for n in downloads[1][1] if "/" in n]


def test_the_second_download_asks_for_the_commit_the_first_one_got(downloads):
    """Plant h03: the files after config.json are fetched at the commit config.json came from, not by the branch
    name again: a push between the two downloads gave a config of one commit and weights of another."""
    hub._download("org/m", "main", _listing("config.json", "tokenizer.json", "model.safetensors"))
    assert [revision for revision, _ in downloads] == ["main", COMMIT]


def test_weights_only_in_a_subfolder_are_no_weights():
    """Plant h04: the listing is judged by its top folder, as the download takes it: weights only under a subfolder
    passed the listing, and the import downloaded no weights at all."""
    with pytest.raises(store.CheckpointError, match="has no weights"):
        hub._check_listing("org/m", ["config.json", "tokenizer.json", "original/model.safetensors"])


def _fake_hub(monkeypatch, names, gated=False, info_error=None):
    from test_store import FakeHub

    return FakeHub(monkeypatch, names, gated=gated, info_error=info_error)


def test_an_automatically_gated_model_is_refused_without_accept_license(isolated, monkeypatch):
    """Plant h05: a model gated "auto" (the licence is granted at once once accepted) is still a licence to accept:
    only "manual" was refused, and the import downloaded an automatically gated model unasked."""
    fake = _fake_hub(monkeypatch, ["config.json", "model.safetensors", "tokenizer.json"], gated="auto")
    with pytest.raises(store.GatedModelError, match="--accept-license"):
        store.import_model("org/gated", progress=False)
    assert fake.downloads == []


def test_a_hub_that_cannot_be_reached_says_check_the_network_and_the_command_as_given(isolated, monkeypatch):
    """Plants h06, h07: unreachable (not switched off), the advice is the network, not HF_HUB_OFFLINE; and the command
    to run again is the one given, --accept-license included."""
    _fake_hub(monkeypatch, [], info_error=ConnectionError("Connection refused"))
    with pytest.raises(store.HubError) as refused:
        store.import_model("org/gated", accept_license=True, progress=False)
    said = str(refused.value)
    assert "Check the network" in said and "HF_HUB_OFFLINE" not in said
    assert "`neurobrix import org/gated --accept-license` again" in said


def test_a_revision_gone_during_the_download_is_one_line(isolated, monkeypatch):
    """Plant h08: a revision deleted between model_info and the download (a branch removed) ended the import in
    RevisionNotFoundError's traceback; it is ModelNotFoundError, one line, as before the download."""
    from huggingface_hub.errors import RevisionNotFoundError
    from test_store import _hub_error

    _fake_hub(monkeypatch, ["config.json", "model.safetensors", "tokenizer.json"])

    def gone(*args):
        raise _hub_error(RevisionNotFoundError, "404 revision not found")

    monkeypatch.setattr(hub, "_download", gone)
    with pytest.raises(store.ModelNotFoundError, match="org/m: 404 revision not found"):
        store.import_model("org/m", revision="feature", progress=False)


# -- hub.py's blob check (strict round 45) ---------------------------------------------------------------------------


def test_a_blob_is_hashed_whole_past_the_first_read_and_its_reads_counted_as_read(tmp_path):
    """Plants b02, b03: a file over one read (16 MiB) is hashed to its end, as sha256sum and `git hash-object` hash
    it (a weights file damaged past its first 16 MiB passed); the progress bar is told the bytes read, not a read's
    size (it ran past the total on every file's last read)."""
    import hashlib
    import subprocess

    data = bytes(range(251)) * ((17 << 20) // 251)
    blob = tmp_path / "blob"
    blob.write_bytes(data)
    reads: list[int] = []
    assert hub._blob_digest(blob, git=False, read=reads.append) == hashlib.sha256(data).hexdigest()
    assert sum(reads) == len(data)
    git = subprocess.run(["git", "hash-object", str(blob)], capture_output=True, text=True, check=True).stdout.strip()
    assert hub._blob_digest(blob, git=True) == git


# -- certify: provenance, write_table --------------------------------------------------------------------------------


def _git(folder: Path, *args: str) -> None:
    import subprocess

    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True, capture_output=True
    )


def test_the_commit_a_table_records_says_an_uncommitted_edit_of_the_engine_or_the_harness(tmp_path, monkeypatch):
    """Found and fixed (plant c04 found it): provenance ran `git status -- neurobrix conformance` in conformance/,
    where git reads the paths as conformance/neurobrix and conformance/conformance, so no edit was ever seen and a
    table certified from an edited kernel or harness recorded a clean commit. Checked against git in a repository laid
    out as this one (certify's module placed in it): an edit under either folder is said, one elsewhere is not."""
    from conformance import certify

    monkeypatch.delenv("NEUROBRIX_SOURCE_COMMIT", raising=False)
    repo = tmp_path / "repo"
    for folder in ("neurobrix", "conformance"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "a.py").write_text("x = 1\n", encoding="utf-8")
    (repo / "README.md").write_text("r\n", encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "c")
    monkeypatch.setattr(certify, "__file__", str(repo / "conformance" / "certify.py"))
    assert not certify.provenance("c")["git_commit"].endswith("+uncommitted-changes")
    (repo / "README.md").write_text("edited\n", encoding="utf-8")
    assert not certify.provenance("c")["git_commit"].endswith("+uncommitted-changes")
    for folder in ("neurobrix", "conformance"):
        (repo / folder / "a.py").write_text("x = 2\n", encoding="utf-8")
        assert certify.provenance("c")["git_commit"].endswith("+uncommitted-changes"), folder
        _git(repo, "checkout", "-q", "--", folder)


def test_a_commit_given_outright_is_the_one_recorded(monkeypatch):
    """Plant c03: NEUROBRIX_SOURCE_COMMIT (a copy of the tree whose git is stale) wins over what git says."""
    from conformance import certify

    monkeypatch.setenv("NEUROBRIX_SOURCE_COMMIT", "feedc0ffee12")
    assert certify.provenance("c")["git_commit"] == "feedc0ffee12"


def test_a_gpu_tables_timing_note_names_programmatic_dependent_launch_only_where_used(monkeypatch):
    """Plant c05: the timing note says the kernels were timed launched with PDL only when they were."""
    from conformance import certify
    from neurobrix import gpu

    monkeypatch.setattr(certify, "device_facts", lambda: gpu.DeviceFacts("cuda", "nvidia", "NVIDIA H200", (9, 0), 132))
    assert "programmatic dependent launch" in certify.provenance("c", pdl=True)["timing"]
    assert "programmatic dependent launch" not in certify.provenance("c", pdl=False)["timing"]


def test_certify_for_a_model_outside_the_catalogue_is_a_usage_error_naming_it():
    """Plant c02: --models naming a model the catalogue lacks is refused, naming it and the way out (--config); a
    plan that swallowed it certified nothing for a GPU class and said nothing."""
    from conformance import certify
    from neurobrix.errors import UsageError

    with pytest.raises(UsageError, match="not in the catalogue: no-such-model;.*--config"):
        certify.plan("fake-hopper", ["rms_norm"], ["fp16"], models=["no-such-model"])


def test_certify_writes_no_table_whose_first_entry_run_refuses(tmp_path):
    """Plant c07: every entry is held to what `run` takes before the table is written, the first in the table's
    order too (round 26's test refuses all of them at once)."""
    import dataclasses
    import shutil

    from conftest import REPO, retrack

    from conformance.certify import write_table
    from neurobrix import tables
    from neurobrix.errors import TablesError

    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    retrack(root)
    record = tables.load(root).proofs("interpreter", "rms_norm")
    entries = sorted(record.entries, key=lambda e: (e.domain.dtypes, [(lo, hi or 0) for _, lo, hi in e.domain.ranges]))
    assert len(entries) > 1
    entries[0] = dataclasses.replace(entries[0], config={**entries[0].config, "EVEN_N": 1})
    before = tables.index_path(root, "interpreter", "rms_norm").read_bytes()
    with pytest.raises(TablesError, match=r"EVEN_N.*`neurobrix run` refuses it"):
        write_table(root, "interpreter", "rms_norm", entries[::-1], dict(record.provenance))
    assert tables.index_path(root, "interpreter", "rms_norm").read_bytes() == before


def test_a_table_is_written_in_one_order_whatever_the_order_of_its_entries(tmp_path):
    """Plant c06: write_table orders the entries (by dtypes, then domain), so a table certified in chunks, or added
    to, is the same bytes as one certified at once (the tracked-file list hashes it)."""
    import shutil

    from conftest import REPO, retrack

    from conformance.certify import write_table
    from neurobrix import tables

    root = tmp_path / "tables"
    shutil.copytree(REPO / "tables" / "interpreter", root / "interpreter")
    retrack(root)
    record = tables.load(root).proofs("interpreter", "rms_norm")
    written = []
    for entries in (list(record.entries), list(record.entries)[::-1]):
        path = write_table(root, "interpreter", "rms_norm", entries, dict(record.provenance))
        written.append((path.read_bytes(), tables.proofs_path(root, "interpreter", "rms_norm").read_bytes()))
    assert len(record.entries) > 1 and written[0] == written[1]


# -- check: conforms -------------------------------------------------------------------------------------------------


def _judged(monkeypatch, wrong=None):
    """check.judge recorded (shape, ratio) per example; ``wrong(case)`` True makes that example's output wrong."""
    from conformance import check

    seen: list[tuple[dict, float]] = []
    real_judge, real_run = check.judge, check.run_kernel

    def run(case, config):
        outputs = real_run(case, config)
        if wrong is not None and wrong(case):
            outputs[0].add_(1000.0)
        return outputs

    def judge(case, outputs, config):
        verdict = real_judge(case, outputs, config)
        seen.append((dict(case.shape), verdict.ratio))
        return verdict

    monkeypatch.setattr(check, "run_kernel", run)
    monkeypatch.setattr(check, "judge", judge)
    return seen


def _entry(kernel: str, dtype: str, **his: int):
    from neurobrix import tables
    from neurobrix.schema import Domain, Setting

    entry = next(e for e in tables.load().index("interpreter", kernel).entries if e.domain.dtypes == (dtype,))
    ranges = tuple((d, lo, his.get(d, hi)) for d, lo, hi in entry.domain.ranges)
    return Setting(Domain(entry.domain.dtypes, ranges), entry.config)


def test_an_entrys_worst_error_is_the_worst_of_its_examples(monkeypatch):
    """Plant k02: the report's worst ratio is the largest of every example's, not the last one's (the first example's
    verdict is given an error of its whole bound, which still passes)."""
    import dataclasses

    from conformance import check

    seen: list[float] = []
    real = check.judge

    def judge(case, outputs, config):
        verdict = real(case, outputs, config)
        verdict = dataclasses.replace(verdict, ratio=1.0) if not seen else verdict
        seen.append(verdict.ratio)
        return verdict

    monkeypatch.setattr(check, "judge", judge)
    result = check.check_entry("silu_mul", _entry("silu_mul", "fp32"), "fp32", 12, "ci")
    assert result.passed and result.examples == len(seen) > 1 and seen[-1] < 1.0
    assert result.worst_ratio == 1.0


def test_a_failing_entry_counts_the_examples_up_to_its_failure(monkeypatch):
    """Plant k03: a failing entry's count of examples stops at its first failure (that one counted: the count is of
    the examples run up to the verdict); the examples Hypothesis runs while it shrinks the failure were counted too."""
    from conformance import check

    seen = _judged(monkeypatch, wrong=lambda case: case.shape["I"] > 3)
    result = check.check_entry("silu_mul", _entry("silu_mul", "fp32"), "fp32", 30, "ci")
    assert not result.passed
    first = next(i for i, (_, ratio) in enumerate(seen) if ratio > 1)
    assert result.examples == first + 1
    assert len(seen) > first + 1  # (shrinking ran passing examples after the failure)


def test_an_edge_shape_at_the_top_of_an_entrys_domain_is_checked(monkeypatch):
    """Plant k04: a kernel's edge shapes are checked inside an entry's domain, its top included (greedy_pick's
    V=32770, past its two-pass split, in a domain ending there)."""
    from conformance import check

    seen = _judged(monkeypatch)
    edge = {"B": 2, "V": 32770}
    result = check.check_entry("greedy_pick", _entry("greedy_pick", "fp32", V=32770), "fp32", 1, "ci", shrink=False)
    assert result.passed
    assert edge in [shape for shape, _ in seen]


# -- store.py: the sweep ---------------------------------------------------------------------------------------------


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def test_a_linked_model_folder_left_aside_by_a_dead_command_is_swept_as_a_link(isolated):
    """Plant s05: a scratch entry that is a link (a model folder linked into the store, moved aside by a `remove` or a
    re-import that was killed) cannot be claimed (its claim opens no link): it is a dead command's, swept as a link,
    the folder it leads to untouched. Taken for claimed, it stayed in the store for good."""
    target = isolated / "mine"
    target.mkdir()
    (target / "config.json").write_text("{}", encoding="utf-8")
    root = store.models_dir()
    root.mkdir(parents=True)
    link = root / f"{store._SCRATCH}{store._host()}-{_dead_pid()}-{'0' * 12}"
    link.symlink_to(target)
    assert store.list_models() == []
    assert not link.is_symlink() and (target / "config.json").exists()


def test_a_model_moved_aside_is_put_back_though_its_organisation_folder_is_gone(isolated):
    """Plant s08: the sweep puts back a model that a killed re-import had moved aside; where its organisation's
    folder is gone meanwhile (a `remove` of the organisation's last model took it), the folder is made again. Without
    it the rename failed, and the model was deleted as any scratch."""
    import json

    model = store.import_model(str(make_checkpoint(isolated / "m")), progress=False)
    root = store.models_dir()
    aside = root / f"{store._SCRATCH}{store._host()}-{_dead_pid()}-{store._ASIDE}{'0' * 12}"
    model.path.rename(aside)
    manifest = aside / store.MANIFEST
    data = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**data, "name": "org/m"}), encoding="utf-8")
    assert [m.name for m in store.list_models()] == ["org/m"]
    assert not aside.exists() and (root / "org" / "m" / "config.json").exists()


def test_remove_sweeps_a_dead_imports_folder_first(isolated):
    """Plant s09: `remove` sweeps what killed imports left, as `import` and `list` do (its docstring says so)."""
    store.import_model(str(make_checkpoint(isolated / "m")), progress=False)
    left = store.models_dir() / f"{store._SCRATCH}{store._host()}-{_dead_pid()}-{'0' * 12}"
    left.mkdir()
    (left / "model.safetensors").write_bytes(b"x" * 100)
    assert store.remove("m").name == "m"
    assert not left.exists()
