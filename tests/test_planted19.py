"""Round 19 of planted bugs: small, realistic bugs planted one at a time by hand in code no earlier round planted in
(the checkpoint checks, the hub download, the warmup plan, doctor, the compiler-stack rule and re-proofs, the store's
and the CLI's commands, `conformance rank`, `affected`, `reproof`, `sweep` and `track`, and a few of the gate's
name and completeness checks), each run against the test files that exercise its function. Each test here failed
with one surviving bug and passes without it (which bug: its docstring); the truth is the rule the function's
docstring states, or what the reference library does (huggingface_hub's offline switch, safetensors' reader,
packaging's PEP 440 versions).

Planted (id: change -> outcome with the existing tests; "caught here": a test below catches it):
  checkpoint.py ck01 a template named '..' allowed -> equivalent;  ck02 a shard index naming '.x.safetensors'
                -> caught here;  ck03 an empty weight_map taken -> equivalent;  ck04 a folder named *.safetensors read
                as weights -> caught here;  ck05 a header length of 0 or past the file read -> equivalent;  ck06 true
                as an offset -> equivalent;  ck07 the data's end from the header's last tensor -> caught here;  ck08
                lm_head standing in for the embedding of untied weights -> caught here;  ck09 any *inv_freq set aside
                -> caught here;  ck10 a tensor in two files -> caught;  ck11 the index stored beside
                model.safetensors -> caught here;  ck12 only *config.json held to objects -> caught here;  ck13 float8
                weights -> caught;  ck14 vocab.json not named as a slow tokenizer -> caught here
  hub.py        hb01 a subfolder's files counted as the top -> caught here;  hb02 the index fetched beside
                model.safetensors -> caught here;  hb03 a subfolder's *.safetensors fetched -> caught here;  hb04
                '--' in a hub id -> caught;  hb05 HF_HUB_OFFLINE=yes read as off -> caught;  hb06 gated only when
                True -> caught;  hb07 the weights fetched at the branch, not the commit checked -> caught here;  hb08
                TRANSFORMERS_OFFLINE unread -> caught here (and an empty HF_HUB_OFFLINE, fixed);  hb09 HF_HUB_CACHE
                unread -> caught
  warmup.py     wu01-wu06, wu11 -> caught;  wu07 the first capacity of a class kept, not one already built -> caught
                here;  wu08 a prefill planned into a cache of its own length -> equivalent;  wu09 a segment judged by
                any representative -> equivalent;  wu12 ``and`` for ``or`` over prompts and capacities -> equivalent
  doctor.py     dc01, dc02, dc06 -> caught;  dc03 on to the device without torch -> caught here;  dc04 the first two
                findings not counted -> equivalent;  dc05 a setting naming no variant -> caught here;  dc07 the kernel
                sources' finding dropped -> caught here
  stack.py      sk01 torch's epoch not compared -> caught here;  sk02-sk06, sk11 -> caught;  sk07 a table removed since
                a re-proof unseen -> caught here;  sk08 a re-proof's class unread -> equivalent;  sk09 "no re-proof
                recorded" printed as a problem -> caught here;  sk10 a second record read past the matching one
                -> caught here
  cli*.py       cs01-cs03, cs05, cl01-cl04 -> caught
  rank.py       rk01 a step's time read as the timer's -> caught here;  rk02-rk08 -> caught
  affected.py   af01 ``tables/<name>`` of two parts a class folder -> equivalent;  af02, af03, af05, af07 -> caught
                af04 the interpreter class told by its id, not its backend -> equivalent
                af06 the last reason kept, not the first -> caught here
  reproof.py, sweep.py, track.py, gate/  rp01-rp03, sw02, tr01, tr02, gn01, gn04, gc01-gc03 -> caught;  sw01 the first
                candidate pruned at the domain's low corner -> equivalent;  gn02 '~0' not a short name -> equivalent

Equivalent: ck01 no '..' ends in '.jinja'; ck03 an empty map names no shard and the checkpoint is refused by its
missing tensors; ck05 a header that short or long does not parse or does not add up; ck06 safetensors refuses a
boolean offset; wu08 a prefill's settings do not depend on its cache's capacity; wu09 every length of a segment
resolves alike (plan.length_segments); wu12 each of the prompts and capacities is empty when the other is; dc04
doctor's first two findings are always info; sk08 another class's re-proof lists other files and is stale; af01 a
path of two parts under tables/ is a file, never a class folder; af04 the schema lets only the class named interpreter
match the interpreter; sw01 the first candidate of every kernel's space fits at both corners of its sweep domain; gn02
Windows numbers its short names from ~1.
"""

from __future__ import annotations

import json
import struct

import pytest


# ------------------------------------------------------------------------------------------ checkpoint.py
def test_an_index_naming_a_hidden_shard_reads_it_and_one_outside_the_folder_is_refused(tmp_path):
    """Planted ck02 let a shard name starting with '.' through when the rule was plain names. Since text round 45 the
    rule is transformers' from_pretrained's: a hidden name (``.x.safetensors``, ``..safetensors``) is a file of the
    folder and read, and a name with a ".." part, which leaves the folder, is refused as it refuses it."""
    from neurobrix.checkpoint import INDEX, CheckpointError, shards_named

    index = tmp_path / INDEX
    for name in (".model-00001-of-00002.safetensors", "..safetensors"):
        index.write_text(json.dumps({"metadata": {}, "weight_map": {"model.norm.weight": name}}), encoding="utf-8")
        assert shards_named(index) == [name]
    for name in ("../model-00001-of-00002.safetensors", "sub/../x.safetensors"):
        index.write_text(json.dumps({"metadata": {}, "weight_map": {"model.norm.weight": name}}), encoding="utf-8")
        with pytest.raises(CheckpointError, match="points outside the model's folder"):
            shards_named(index)


def test_a_folder_named_like_weights_is_not_read_as_a_shard(tmp_path):
    """Planted ck04: checkpoint.weight_files globs every top-level *.safetensors, folders included, where a
    folder without model.safetensors or an index is read: a folder named ``extra.safetensors`` beside the shards
    was then opened as weights (an OSError, not the checkpoint's files). Since text round 44 such a folder's files
    are refused (transformers' from_pretrained loads no model from them); the refusal names the files, not the
    folder."""
    from store_fixtures import make_checkpoint

    from neurobrix.checkpoint import INDEX, CheckpointError, checkpoint_files, weight_files

    folder = make_checkpoint(tmp_path / "tiny", shards=2, use_transformers=False)
    (folder / INDEX).unlink()
    (folder / "extra.safetensors").mkdir()
    for check in (weight_files, checkpoint_files):
        with pytest.raises(CheckpointError, match="neither model.safetensors nor shards") as refused:
            check(folder)
        assert "model-00001-of-00002.safetensors" in str(refused.value)
        assert "extra.safetensors" not in str(refused.value)


def test_a_header_listing_its_tensors_out_of_byte_order_is_read_as_safetensors_reads_it(tmp_path):
    """Planted ck07: checkpoint._check_safetensors takes the data's end from the header's last tensor, not the
    largest end: a header that lists its tensors in another order than their bytes (the format sets none; safetensors
    reads it) was refused as truncated."""
    from safetensors import safe_open

    from neurobrix.checkpoint import _check_safetensors

    header = json.dumps(
        {
            "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]},
            "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        }
    ).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(16))
    with safe_open(str(path), framework="pt") as f:  # the reference reads it
        expected = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
    assert _check_safetensors(path) == expected == {"a": (2,), "b": (2,)}


def test_untied_weights_without_their_embedding_are_refused(tmp_path):
    """Planted ck08: checkpoint.tensor_problems lets lm_head.weight stand in for a missing embedding whatever
    tie_word_embeddings says: an untied checkpoint without model.embed_tokens.weight was stored, and its run would
    embed with the output head's rows."""
    from safetensors.torch import load_file, save_file
    from store_fixtures import make_checkpoint

    from neurobrix.checkpoint import CheckpointError, checkpoint_files

    folder = make_checkpoint(tmp_path / "tiny", use_transformers=False)
    assert json.loads((folder / "config.json").read_text(encoding="utf-8"))["tie_word_embeddings"] is False
    weights = load_file(str(folder / "model.safetensors"))
    del weights["model.embed_tokens.weight"]
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="has no tensor 'model.embed_tokens.weight'"):
        checkpoint_files(folder)


def test_only_a_rotary_table_is_set_aside_among_unused_tensors():
    """Planted ck09: checkpoint.tensor_problems sets aside every tensor ending in ``inv_freq``, not only a rotary
    table (``rotary_emb.inv_freq``, which older transformers saved and no run reads): another such tensor is one
    this engine would ignore, and so a checkpoint it does not run as its author meant."""
    from store_fixtures import config_dict

    from neurobrix.checkpoint import tensor_problems
    from neurobrix.config import ModelConfig, checkpoint_shapes

    cfg = ModelConfig.from_hf(config_dict(), source="config.json")
    found = dict(checkpoint_shapes(cfg))
    assert tensor_problems(cfg, {**found, "model.layers.0.self_attn.rotary_emb.inv_freq": (4,)}) == []
    problems = tensor_problems(cfg, {**found, "model.layers.0.mlp.inv_freq": (4,)})
    assert problems and "model.layers.0.mlp.inv_freq" in problems[0]


def test_an_index_beside_model_safetensors_is_not_stored(tmp_path):
    """Planted ck11: checkpoint.checkpoint_files lists the shard index among the files to store beside
    model.safetensors, which from_pretrained (and run) reads instead of any index: a file no run reads was stored."""
    from store_fixtures import make_checkpoint

    from neurobrix.checkpoint import INDEX, checkpoint_files

    folder = make_checkpoint(tmp_path / "tiny", use_transformers=False)
    (folder / INDEX).write_text(json.dumps({"weight_map": {"model.norm.weight": "model.safetensors"}}), "utf-8")
    files = checkpoint_files(folder)
    assert "model.safetensors" in files and INDEX not in files


@pytest.mark.parametrize("name", ["special_tokens_map.json", "added_tokens.json"])
def test_every_optional_json_file_must_be_an_object(tmp_path, name):
    """Planted ck12: checkpoint._check_optional holds only the *config.json files to being JSON objects:
    special_tokens_map.json or added_tokens.json holding a list (transformers reads each as a mapping and fails)
    was stored."""
    from store_fixtures import make_checkpoint

    from neurobrix.checkpoint import CheckpointError, checkpoint_files

    folder = make_checkpoint(tmp_path / "tiny", use_transformers=False)
    (folder / name).write_text('["<s>"]', encoding="utf-8")
    with pytest.raises(CheckpointError, match=f"{name}: expected a JSON object"):
        checkpoint_files(folder)


def test_a_folder_with_only_a_slow_byte_level_tokenizer_is_told_so(tmp_path):
    """Planted ck14: checkpoint._check_tokenizer names a slow tokenizer only by its sentencepiece files: a folder with
    vocab.json (a byte-level BPE tokenizer's, as GPT-2-style checkpoints ship it) was not told why."""
    from store_fixtures import make_checkpoint

    from neurobrix.checkpoint import CheckpointError, checkpoint_files

    folder = make_checkpoint(tmp_path / "tiny", tokenizer=False, use_transformers=False)
    (folder / "vocab.json").write_text("{}", encoding="utf-8")
    with pytest.raises(CheckpointError, match=r"it has only vocab\.json: a slow tokenizer"):
        checkpoint_files(folder)


# ------------------------------------------------------------------------------------------------- hub.py
@pytest.mark.parametrize(
    ("hub", "transformers"), [(None, "1"), (None, "0"), ("", "1"), ("", "0"), ("0", "1"), ("1", "0"), (None, "yes")]
)
def test_transformers_offline_switches_the_network_off_as_for_huggingface_hub(monkeypatch, hub, transformers):
    """Planted hb08: hub.hub_offline reads HF_HUB_OFFLINE only: TRANSFORMERS_OFFLINE=1, offline to huggingface_hub
    (``HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE``), sent an import to the network. Found beside it: an empty
    HF_HUB_OFFLINE was read as off, where huggingface_hub takes TRANSFORMERS_OFFLINE's value (fixed)."""
    import os

    from huggingface_hub import constants

    from neurobrix import hub as nb_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    if hub is not None:
        monkeypatch.setenv("HF_HUB_OFFLINE", hub)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", transformers)
    reference = constants._is_true(os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE"))
    assert nb_hub.hub_offline() == reference


def _hub_download(monkeypatch, tmp_path, names):
    """hub._download over a canned listing, each download served from a local checkpoint: the patterns asked."""
    from types import SimpleNamespace

    from store_fixtures import make_checkpoint

    from neurobrix import hub

    snapshot = make_checkpoint(tmp_path / ("a" * 40), use_transformers=False)
    asked: list[list[str]] = []
    revisions: list[str | None] = []

    def snapshot_download(repo_id, *, revision, allow_patterns, local_files_only):
        asked.append(list(allow_patterns))
        revisions.append(revision)
        return snapshot

    monkeypatch.setattr(hub, "_snapshot_download", snapshot_download)
    info = SimpleNamespace(siblings=[SimpleNamespace(rfilename=n) for n in names])
    hub._download("org/name", "main", info)
    return asked, revisions


def test_a_hub_index_beside_model_safetensors_is_not_fetched(monkeypatch, tmp_path):
    """Planted hb02: hub._download takes a repository with model.safetensors and a shard index for a sharded one:
    the index, which from_pretrained (and run) never reads beside model.safetensors, was fetched."""
    names = ["config.json", "model.safetensors", "model.safetensors.index.json", "tokenizer.json"]
    asked, _ = _hub_download(monkeypatch, tmp_path, names)
    assert asked[0] == ["config.json"]
    assert "model.safetensors.index.json" not in asked[1] and "model.safetensors" in asked[1]


def test_the_files_come_from_the_commit_whose_config_was_checked(monkeypatch, tmp_path):
    """Planted hb07: hub._download fetches the weights at the revision asked (a branch) rather than at the commit its
    config.json was checked at: a branch moved between the two downloads gave a config of one commit and weights of
    another."""
    names = ["config.json", "model.safetensors", "tokenizer.json"]
    _, revisions = _hub_download(monkeypatch, tmp_path, names)
    assert revisions == ["main", "a" * 40]


def test_safetensors_in_a_hub_subfolder_are_neither_fetched_nor_counted(monkeypatch, tmp_path):
    """Planted hb03: hub._download fetches every *.safetensors of the repository, subfolders' too (files no run
    reads); hb01: hub._check_listing counts a subfolder's files as the repository's top, so a repository whose only
    weights lie in a subfolder was downloaded before being refused."""
    from neurobrix import hub
    from neurobrix.checkpoint import CheckpointError

    names = ["config.json", "model.safetensors", "tokenizer.json", "extra/weights.safetensors"]
    asked, _ = _hub_download(monkeypatch, tmp_path, names)
    assert "model.safetensors" in asked[1] and not [n for n in asked[1] if "/" in n]
    with pytest.raises(CheckpointError, match="has no weights"):
        hub._check_listing("org/name", ["config.json", "tokenizer.json", "original/model.safetensors"])


# ---------------------------------------------------------------------------------------------- warmup.py
def test_a_prompt_is_prefilled_into_a_cache_already_built_when_its_window_holds_one():
    """Planted wu07: warmup.plan_warmup keeps the first capacity of each class in a prompt's window, not one the
    decode steps already build: every class is still covered, but caches of their own were built for prefills that
    one already built serves (the plan's rule: few caches are built)."""
    import dataclasses

    from test_runtime_planted import TINY

    from neurobrix.tables import load
    from neurobrix.warmup import _class_of, _clip, plan_warmup

    context = 100  # a capacity segment past 64 whose middle lengths (81-84) no decode step builds
    new = context - 1  # the default: a window as wide as the context leaves
    plan = plan_warmup(dataclasses.replace(TINY, max_positions=context), load(), "interpreter", "fp32")
    assert plan.prefills
    for capacity, prompts in plan.prefills.items():
        if capacity in plan.decodes:
            continue
        for prompt in prompts:  # a cache of its own: no decode step's cache of its class in the window
            window = _clip(plan.capacities, prompt + 1, min(prompt + new, context))
            assert not [
                c for c in plan.decodes if _class_of(c) == _class_of(capacity) and any(a <= c <= b for a, b in window)
            ], (prompt, capacity)


# ---------------------------------------------------------------------------------------------- doctor.py
def test_doctor_without_torch_reports_it_and_stops_before_the_device(monkeypatch):
    """Planted dc03: doctor.diagnose goes on to the device without torch (and without the interpreter): the device
    facts import torch, so doctor failed with an ImportError traceback where it should report torch not installed."""
    import sys

    import neurobrix.ops  # noqa: F401  (the kernels, imported with torch before it is taken away)
    import neurobrix.store  # noqa: F401
    from neurobrix import doctor

    version = doctor._version
    monkeypatch.setattr(doctor, "_version", lambda package: None if package == "torch" else version(package))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError, as where it is absent
    found = {f.name: f for f in doctor.diagnose()}
    assert found["torch"].status == doctor.FAIL and found["torch"].value == "not installed"
    assert "device" not in found


def test_doctor_is_blocked_by_kernels_patched_after_the_install(tmp_path, monkeypatch):
    """Planted dc07: doctor.diagnose leaves out the finding of stack.installed_kernels_problem: kernels patched in
    site-packages after the wheel installed them (every run refuses them, exit 6) left doctor ready."""
    from test_strict_round20 import _installed

    from neurobrix import doctor, stack

    package = _installed(tmp_path)
    monkeypatch.setattr(stack, "PACKAGE", package, raising=False)
    assert "kernel sources" not in {f.name for f in doctor.diagnose()}  # control: as installed
    source = package / "ops" / "linear.py"
    source.write_text(source.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    found = {f.name: f for f in doctor.diagnose()}
    said = found["kernel sources"]
    assert said.status == doctor.FAIL and "ops/linear.py (changed since)" in said.value
    assert doctor.blocked(list(found.values()))


# ----------------------------------------------------------------------------------------------- stack.py
def test_of_two_records_of_the_package_the_one_its_kernels_match_is_the_install(tmp_path):
    """Planted sk10: stack.installed_kernels_problem goes on past a record the kernels match: a second .dist-info of
    neurobrix left beside the package (an older install's, which lists other hashes) refused kernels exactly as
    the install's own record lists them."""
    import shutil

    from test_strict_round20 import _installed

    from neurobrix import stack

    package = _installed(tmp_path)
    info = package.parent / "neurobrix-0.1.0.dist-info"
    old = package.parent / "neurobrix-0.0.9.dist-info"
    shutil.copytree(info, old)
    (old / "METADATA").write_text("Metadata-Version: 2.1\nName: neurobrix\nVersion: 0.0.9\n", encoding="utf-8")
    rows = (old / "RECORD").read_text(encoding="utf-8").splitlines(True)
    (old / "RECORD").write_text(
        "".join(r.replace("sha256=", "sha256=A", 1) if "ops/linear.py" in r else r for r in rows), encoding="utf-8"
    )
    assert stack.installed_kernels_problem(package) is None
    shutil.rmtree(info)  # control: the older record alone does not match these kernels
    assert "neurobrix/ops/linear.py (changed since)" in (stack.installed_kernels_problem(package) or "")


@pytest.mark.parametrize("other", ["2.11.0", "2.11.3", "2.12.0", "1!2.11.0", "2.11.0+cu130"])
def test_torch_of_the_same_major_minor_is_read_as_pep_440_reads_it(other):
    """Planted sk01: stack.compatible compares torch's major.minor without its epoch: ``1!2.11.0``, which PEP 440
    puts after every 2.x release (another release line), passed for 2.11."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from neurobrix.stack import Stack, compatible

    same = Version(other) in SpecifierSet("==2.11.*")
    assert compatible(Stack("2.11.0", "3.6.0"), Stack(other, "3.6.0")) == same
    assert compatible(Stack(other, "3.6.0"), Stack("2.11.0", "3.6.0")) == same


def test_a_reproof_is_stale_once_a_table_it_covered_is_gone(tmp_path, monkeypatch):
    """Planted sk07: stack.reproof_problem compares the tables' hashes only over the files the class has now: a
    kernel table removed since the re-proof (the class now another set of settings) left it standing."""
    from conftest import retrack
    from kernel_tables import write_tables

    from neurobrix import stack, tables

    root = write_tables(tmp_path / "t")
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    running = stack.Stack("2.99.0", "9.9.9")
    stack.write_reproof("interpreter", tables.load(root), running, {"passed": True}, "test", "test")
    assert stack.reproof_problem("interpreter", tables.load(root), running) is None  # control
    for path in (root / "interpreter").glob("silu_mul.*"):
        path.unlink()
    retrack(root)
    tables.clear_cache()
    problem = stack.reproof_problem("interpreter", tables.load(root), running) or ""
    assert "is stale" in problem and "interpreter/silu_mul.json" in problem


# ------------------------------------------------------------------------------------- conformance/rank.py
def test_a_ranked_entrys_step_times_are_not_taken_for_timer_times():
    """Planted rk01: rank.alternatives reads a rejected line of a ranking in the step (``12.34 us a step in the
    decode step of ...``) as a time alone: a run with ``again`` then tried the settings a step already ranked, by
    their step times, in place of the next ones the timer rejected."""
    from pathlib import Path

    from conformance import rank
    from conformance.certify import existing_table

    table = existing_table(Path(__file__).resolve().parent.parent / "tables", "nvidia-h200", "linear")
    entry = next(e for e in table.entries if not rank.ranked(e) and len(rank.alternatives(e, 100)) > 4)
    spans = entry.domain.spans()
    call = ("linear", "bf16", tuple(spans[d][0] for d in ("M", "N", "K")))
    tried = rank.alternatives(entry, 4)
    new, _, _ = rank.rank_call(
        entry, call, "a model at batch 1", 4, 0.003, lambda settings: [1.0] + [2.0] * (len(settings) - 1), None
    )
    assert rank.ranked(new)
    again = [c for _, c in rank.alternatives(new, 100)]
    assert again and not [c for _, c in tried if c in again]


# --------------------------------------------------------------------------------- conformance/affected.py
def test_a_class_affected_twice_keeps_the_first_reason_found():
    """Planted af06: affected.Affected.add keeps the last reason given for a class, not the first found (the
    module's rule): the explanation named the last changed path, and a class named with --class lost the path that
    affected it."""
    from conformance.affected import GPUClassInfo, affected_by

    classes = {"gpu-a": GPUClassInfo("gpu-a", True)}
    found = affected_by(["tables/gpu-a/linear.json", "neurobrix/ops/linear.py", "tables/gpu-a/class.yaml"], classes)
    assert found.explain() == ["gpu-a: tables/gpu-a/linear.json"]
    found.add("gpu-a", "named with --class")
    assert found.reasons == {"gpu-a": "tables/gpu-a/linear.json"}


def test_doctor_is_blocked_by_a_linear_setting_that_names_no_variant(tmp_path, monkeypatch):
    """Planted dc05: doctor._unrunnable lets through a setting of a kernel with variants that names none (linear's
    setting without ``variant``), which every run's preflight refuses: doctor said ready."""
    from conftest import follow, retrack
    from kernel_tables import write_tables

    from neurobrix import tables
    from neurobrix.doctor import FAIL, diagnose

    root = write_tables(tmp_path / "t")
    path = root / "interpreter" / "linear.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["configs"][0].pop("variant")
    path.write_text(json.dumps(data), encoding="utf-8")
    follow(root, "interpreter", "linear")  # the record proves it too: the check is doctor's own
    retrack(root)
    monkeypatch.setenv(tables.ENV_VAR, str(root))
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    found = {f.name: f for f in diagnose()}
    assert found["kernels"].status == FAIL and "names variant None" in found["kernels"].value


def test_a_refusal_without_any_re_proof_does_not_say_so_as_a_problem():
    """Planted sk09: stack.Verdict.refusal appends the re-proof's problem even when there is no re-proof at all, so
    every refusal of another stack ended in "(no re-proof recorded.)" beside its own advice to make one."""
    from neurobrix.stack import Stack, Verdict

    refused = Verdict("gpu-a", Stack("2.11.0", "3.6.0"), Stack("2.12.0", "3.6.0"), problem="no re-proof recorded")
    assert not refused.ok and "no re-proof recorded" not in refused.refusal()
    stale = Verdict("gpu-a", Stack("2.11.0", "3.6.0"), Stack("2.12.0", "3.6.0"), problem="the re-proof is stale")
    assert "(the re-proof is stale.)" in stale.refusal()
