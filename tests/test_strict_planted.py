"""What makes the guarantee strict, against bugs planted in it: the tracked-file check and the reading of the
verified bytes, where the tables are found, the settings index and its proofs, preflight's refusal and warmup's
length segments, the compiler-stack rule, GPU-class matching, and on the conformance side the bounds, certify's
screening, timing and what its proofs record, the shipped settings' check and the classes a change affects. Each
test failed with one such bug (named in its docstring) that the rest of the suite let through, and passes on the
real code. No kernel is launched: the file takes seconds."""

from __future__ import annotations

import math
import os

import pytest
from conftest import rebind, retrack

from neurobrix import tables
from neurobrix.errors import TablesError

# -- the bytes verified are the bytes read ------------------------------------------------------------------


def test_a_class_yaml_altered_after_the_folder_check_is_refused(fixture_tables, monkeypatch):
    """Planted: tables._load parses class.yaml without the sha256 the folder check verified, so a class.yaml
    changed between the check and its reading (here to match every NVIDIA device's name) is used."""
    real = tables.check_files

    def check_then_alter(root, tracked):
        problems = real(root, tracked)
        path = fixture_tables / "fake-gpu" / "class.yaml"
        path.write_text(path.read_text().replace("device_name: NVIDIA Fake*", 'device_name: "*"'))
        return problems

    monkeypatch.setattr(tables, "check_files", check_then_alter)
    with pytest.raises(TablesError, match=r"fake-gpu/class.yaml: changed while the tables were being loaded"):
        tables.load()


def test_proofs_altered_after_the_folder_check_are_refused(fixture_tables):
    """Planted: Tables.proofs parses the audit record without the sha256 the folder check verified (as the index
    is): `tables verify` would judge bytes nobody hashed."""
    loaded = tables.load()
    path = fixture_tables / "interpreter" / "demo.proofs.yaml"
    path.write_text(path.read_text().replace("worst_error_ratio: 0.25", "worst_error_ratio: 0.24"))
    with pytest.raises(TablesError, match=r"demo.proofs.yaml: changed while the tables were being loaded"):
        loaded.proofs("interpreter", "demo")


def test_an_untracked_symlink_pointing_nowhere_is_refused(fixture_tables, tmp_path):
    """Planted: tables.check_files counts as untracked only what is a file (following links): a symlink to
    nothing, which a later write through it would fill, passes the check."""
    (fixture_tables / "interpreter" / "extra.json").symlink_to(tmp_path / "not-there.json")
    with pytest.raises(TablesError, match=r"interpreter/extra.json: present but not in the tracked list"):
        tables.load()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_an_untracked_fifo_is_refused(fixture_tables):
    """tables.check_files counted as untracked only files and links: a FIFO (which blocks whoever opens it) in a
    class folder passed."""
    os.mkfifo(fixture_tables / "interpreter" / "extra.json")
    with pytest.raises(TablesError, match=r"interpreter/extra.json: present but not in the tracked list"):
        tables.load()


def test_the_env_var_wins_over_the_installed_tables_which_win_over_a_checkout(fixture_tables, monkeypatch, tmp_path):
    """Planted: tables._locate looks at the installed package's tables before NEUROBRIX_TABLES, so an installed
    neurobrix ignores the folder a contributor names (a checkout has no neurobrix/_tables, so nothing else here
    sees the order)."""
    installed = tmp_path / "site-packages" / "neurobrix"
    (installed / "_tables").mkdir(parents=True)
    monkeypatch.setattr(tables.resources, "files", lambda package: installed)
    assert tables.locate() == tables.TablesLocation(fixture_tables.resolve(), tables.ENV_VAR)
    monkeypatch.delenv(tables.ENV_VAR)
    tables.clear_cache()
    assert tables.locate() == tables.TablesLocation(installed / "_tables", "installed package")


@pytest.mark.parametrize("name", ["interpreter/old/demo.json", "interpreter/old/class.yaml"])
def test_a_tracked_table_two_folders_deep_is_refused_as_no_table(fixture_tables, name):
    """Planted: tables._layout_problems judges a tracked file by its last name only, whatever its depth: a table
    tracked one folder below its class folder (an old copy kept beside the new) was taken for a table and loading
    ended in a ValueError instead of a refusal naming it."""
    path = fixture_tables / name
    path.parent.mkdir()
    path.write_bytes((fixture_tables / "interpreter" / path.name).read_bytes())
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=rf"{name}: not a class.yaml, a <kernel>.json or a <kernel>.proofs.yaml"):
        tables.load()


def test_a_tracked_path_with_a_backslash_is_refused():
    """Planted: schema.parse_tracked lets a path with a backslash through: a separator on Windows, where the file
    it names lies in another folder than the one the list says (the release gate reads lists with this function)."""
    from neurobrix.schema import parse_tracked

    item = {"wheel_path": "neurobrix/_tables/x", "sha256": "0" * 64, "size": 0}
    with pytest.raises(TablesError, match=r"files\[0\]\.path': unsafe path"):
        parse_tracked({"format": 1, "files": [{"path": "interpreter\\demo.json", **item}]}, "TRACKED.yaml")


# -- the settings index and its proofs ----------------------------------------------------------------------


def test_an_index_keyed_by_one_dimension_twice_is_refused(fixture_tables):
    """Planted: schema.parse_index lets a key name a dimension twice (M by pow2 and M exact): each row's second range
    then bounds the same value again, and the proofs, whose domain can name M only once, agree with it."""
    import json

    path = fixture_tables / "interpreter" / "demo.json"
    data = json.loads(path.read_text())
    data["key"] = [["M", "pow2"], ["M", "exact"]]
    path.write_text(json.dumps(data))
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"field 'key': expected distinct dimension names .*\['M', 'M'\]"):
        tables.load().index("interpreter", "demo")


def test_tables_verify_refuses_proofs_whose_domain_differs_from_the_index(fixture_tables):
    """Planted: schema.parse_proofs compares each proven entry's config with its index's, not its domain: proofs
    of M = 17..63 stood for an index entry over M = 17..64, and `tables verify` passed."""
    import yaml

    path = fixture_tables / "interpreter" / "demo.proofs.yaml"
    data = yaml.safe_load(path.read_text())
    data["entries"][1]["domain"]["M"] = [17, 63]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    retrack(fixture_tables)
    loaded = tables.load()
    with pytest.raises(TablesError, match=r"entries\[1\]': differs from entry 1 of its index"):
        loaded.proofs("interpreter", "demo")
    assert [p.path for p in tables.verify_all(loaded)] == ["interpreter/demo"]


# -- preflight ----------------------------------------------------------------------------------------------


def test_the_certify_command_names_every_dtype_missing(fixture_tables):
    """Planted: plan.resolve collects the dtypes of the missing calls from the first one only: a run missing fp16 and
    fp32 settings was told to certify one of them, and the command printed fixed half the refusal."""
    from neurobrix.errors import MissingEntryError
    from neurobrix.plan import resolve

    calls = {("silu_mul", "fp16", (2, 8)), ("silu_mul", "fp32", (2, 8)), ("rms_norm", "fp32", (2, 8))}
    with pytest.raises(MissingEntryError) as err:
        resolve(calls, tables.load(), "interpreter")
    message = str(err.value)
    assert "cannot run on GPU class interpreter in fp16, fp32: 3 kernel call(s)" in message
    assert "certify --class interpreter --kernels rms_norm silu_mul --dtypes fp16 fp32 --only-missing" in message


@pytest.mark.parametrize("lo, hi", [(1, 17), (5, 9), (9, 33), (3, 257), (17, 17)])
def test_length_segments_never_hold_two_buckets(fixture_tables, lo, hi):
    """Planted: plan.length_segments walks each rule's buckets while value < hi, so a range ending on a bucket's first
    length (17, 33, 257) got no cut there: that length shared the segment before it, and warmup compiled only the
    other bucket's kernels."""
    from neurobrix.buckets import bucket_of
    from neurobrix.ops import SPECS
    from neurobrix.plan import length_segments

    segments = length_segments(tables.load(), "interpreter", lo, hi)
    assert [first for first, _ in segments] == [lo, *(last + 1 for _, last in segments[:-1])] and segments[-1][1] == hi
    rules = {rule for spec in SPECS.values() for rule in spec.buckets if rule != "exact"}
    for first, last in segments:
        assert all(bucket_of(rule, first) == bucket_of(rule, last) for rule in rules), (first, last)


# -- GPU classes and the compiler stack ---------------------------------------------------------------------


@pytest.mark.parametrize("count", [131, 133, 264])
def test_a_gpu_with_more_multiprocessors_than_its_class_is_uncertified(fixture_tables, count):
    """Planted: gpu.matches takes a device with at least the class's multiprocessor count (the suite drew only
    fewer): a part with more SMs runs other grids and waves, on settings never timed or proven there."""
    from neurobrix import gpu
    from neurobrix.errors import UncertifiedGPUError

    loaded = tables.load()
    facts = gpu.DeviceFacts("cuda", "nvidia", "NVIDIA Fake 9000", (9, 0), 132)
    assert gpu.classify(facts, loaded).id == "fake-gpu"
    with pytest.raises(UncertifiedGPUError, match="this GPU is not certified"):
        gpu.classify(gpu.DeviceFacts("cuda", "nvidia", "NVIDIA Fake 9000", (9, 0), count), loaded)


def test_a_variable_of_the_nvidia_backends_knobs_refuses_a_gpu_class(monkeypatch):
    """Planted: stack.HARMLESS_GROUPS passes the NVIDIA backend's whole group of knobs (for its disassemblers' paths,
    which HARMLESS_ENV lists one by one): TRITON_DUMP_PTXAS_LOG, which nobody read and listed and which is not in the
    compiler's own list of variables that change its code, went through."""
    from neurobrix import stack

    name = "TRITON_DUMP_PTXAS_LOG"

    for var in (*stack.CODEGEN_ENV, *stack.compiler_overrides()):
        monkeypatch.delenv(var, raising=False)
    assert stack.compiler_problem("nvidia-h200") is None
    monkeypatch.setenv(name, "1")
    assert f"{name}=1" in (stack.compiler_problem("nvidia-h200") or "")


def test_a_reproof_goes_stale_when_a_table_is_removed(fixture_tables, tmp_path, monkeypatch):
    """Planted: stack.reproof_problem looks for changes only among the files the re-proof recorded and that are
    still there, so a kernel table removed since (the re-proof's own list names it) went unnoticed."""
    from neurobrix import stack

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = fixture_tables / "interpreter"
    for suffix in (".json", ".proofs.yaml"):  # two kernels certified with another Triton
        text = (folder / f"demo{suffix}").read_text().replace("3.9.0", "0.0.1")
        (folder / f"demo{suffix}").write_text(text)
        (folder / f"other{suffix}").write_text(text.replace("demo", "other"))
    rebind(folder / "other.proofs.yaml", "interpreter", "other")
    retrack(fixture_tables)
    here = stack.Stack("2.13.0", "3.9.0")
    assert not stack.verdict("interpreter", tables.load(), here).ok
    stack.write_reproof("interpreter", tables.load(), here, {"profile": "ci", "passed": True}, "test", "test")
    assert stack.verdict("interpreter", tables.load(), here).ok  # the re-proof admits the tables as they are
    for suffix in (".json", ".proofs.yaml"):
        (folder / f"other{suffix}").unlink()
    retrack(fixture_tables)
    found = stack.verdict("interpreter", tables.load(), here)
    assert not found.ok and "stale: the tables changed since (interpreter/other" in (found.problem or "")


# -- the bounds ---------------------------------------------------------------------------------------------


def test_gemv_partials_rounded_to_fp16_exceed_the_bound_of_its_summation_depth():
    """Planted: bounds.linear_depth counts gemv's lane sum twice (2 BLOCK_K additions): the split-K partials stored in
    fp16 by the gemv setting the H200 ships with BLOCK_K 256 and SPLIT_K 4 stayed within the bound at K = 4096,
    where the kernel's own order sees them."""
    from test_bounds import FP16, LinearCase, _normal, linear_split_gemv

    from conformance import bounds

    K, config = 4096, {"variant": "gemv", "BLOCK_K": 256, "SPLIT_K": 4}
    case = LinearCase(
        _normal(4, K, dtype=FP16, seed=1),
        _normal(512, K, dtype=FP16, seed=2, scale=2.0**-6),
        _normal(512, dtype=FP16, seed=3),
    )
    bound = bounds.linear(case.x, case.w, case.b, case.out64, depth=bounds.linear_depth(config, K, FP16))
    honest = linear_split_gemv(case, config["BLOCK_K"], config["SPLIT_K"])
    wrong = linear_split_gemv(case, config["BLOCK_K"], config["SPLIT_K"], partial_dtype=FP16)
    assert bounds.ratio(honest, case.out64, bound) <= 1 < bounds.ratio(wrong, case.out64, bound)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_a_residual_stream_rounded_toward_zero_exceeds_its_bound(dtype):
    """Planted: bounds.residual_add allows the fp32 addition a relative error of the storage dtype's unit roundoff
    instead of fp32's: about one ulp more than the single rounding to the storage dtype, so h = x + r truncated
    toward zero (up to one whole ulp off) passed, where rounding to nearest is the kernel's contract."""
    import torch

    from conformance import bounds
    from neurobrix.dtypes import torch_dtype

    generator = torch.Generator().manual_seed(0)
    x, r = (torch.randn(64, 256, generator=generator).to(torch_dtype(dtype)) for _ in range(2))
    h64 = x.double() + r.double()
    nearest = (x.float() + r.float()).to(x.dtype)
    bits = nearest.view(torch.int16)
    away = (nearest.double().abs() > h64.abs()) & (nearest != 0)
    toward_zero = torch.where(away, bits - 1, bits).view(x.dtype)  # one ulp less in magnitude where it rounded up
    bound = bounds.residual_add(x, r, h64)
    assert bounds.ratio(nearest, h64, bound) <= 1 < bounds.ratio(toward_zero, h64, bound)


# -- certify: what it keeps and what it records -------------------------------------------------------------


@pytest.mark.parametrize("ratio, kept", [(0.5, True), (1.0, True), (1.001, False), (1.5, False), (math.inf, False)])
def test_screening_keeps_only_candidates_within_their_bound(monkeypatch, ratio, kept):
    """Planted: certify.screen rejects a candidate only past twice its bound: one wrong by 1.5 times the bound at the
    domain's top or odd size survived screening, was timed, and could win wherever its proof's examples missed."""
    from types import SimpleNamespace

    from conformance import certify, harness

    cases = [SimpleNamespace(describe=lambda n=n: f"case {n}") for n in range(2)]
    monkeypatch.setattr(certify, "run_kernel", lambda case, config: case)
    monkeypatch.setattr(
        certify, "judge", lambda case, outputs, config: harness.Verdict(ratio if case is cases[1] else 0.0, "")
    )
    found = certify.screen(None, {}, cases)
    assert found is None if kept else found == ("wrong_result", f"case 1: error {ratio:.3g} x bound")


def _silu_task():
    from conformance import certify

    (task,) = certify.plan("interpreter", ["silu_mul"], ["fp32"])
    return task


def test_candidates_that_cannot_fit_are_recorded_as_rejected(monkeypatch):
    """Planted: certify.screen_task drops the candidates pruned for the device's resources without recording them:
    the proof's rejected list (every candidate tried and why, README) lost them while candidates_tried counted them."""
    from conformance import certify

    configs = [{"BLOCK_M": 1, "BLOCK_I": n} for n in (16, 32, 64)]
    monkeypatch.setattr(certify.cand, "space", lambda kernel, domain, interpreter: list(configs))
    monkeypatch.setattr(
        certify.cand, "prune", lambda kernel, found, *args: (found[:2], [(found[2], "needs 300 KB of shared memory")])
    )
    monkeypatch.setattr(certify, "screening_cases", lambda task, seed: [])
    screened = certify.screen_task("interpreter", _silu_task(), 0)
    assert screened.tried == 3 and screened.survivors == configs[:2]
    assert screened.rejected == [(configs[2], "out_of_resources", "needs 300 KB of shared memory")]


def test_timing_ranks_by_median_and_records_a_candidate_that_fails_there(monkeypatch):
    """Planted: certify.time_task ranks the timed candidates by their best time, not their median (the proof's
    time_median_us, README); certify.time_task drops a candidate that crashes while timed without recording it."""
    from conformance import certify

    configs = [{"BLOCK_M": 1, "BLOCK_I": n} for n in (16, 32, 64, 128)]
    times = {16: (1.0, 9.0), 32: (2.0, 3.0), 64: (3.0, 4.0)}  # best first for 16, median first for 32

    def estimate(task, config, sets, pdl=False):
        if config["BLOCK_I"] == 128:
            raise RuntimeError("an illegal memory access was encountered")
        return 1.0

    monkeypatch.setattr(certify, "timing_sets", lambda task: [])
    monkeypatch.setattr(certify, "estimate", estimate)
    monkeypatch.setattr(certify, "measure", lambda task, config, sets, pdl=False: times[config["BLOCK_I"]])
    timed = certify.time_task("interpreter", certify.Screened(_silu_task(), 0, 4, configs, []))
    assert [c["BLOCK_I"] for _, c in timed.timed] == [32, 64, 16]
    assert [(c, reason) for c, reason, _ in timed.rejected] == [(configs[3], "crashed")]


def test_a_proof_records_its_timings_and_every_candidate_tried(monkeypatch):
    """Planted: certify.prove_task writes the median time as time_best_us and the best as time_median_us;
    certify.prove_task counts as candidates_tried only those that passed screening."""
    from conformance import certify, check

    task = _silu_task()
    configs = [{"BLOCK_M": 1, "BLOCK_I": n} for n in (16, 32, 64)]
    screened = certify.Screened(task, 0, 7, configs[:2], [(configs[2], "wrong_result", "error 3 x bound")])
    timed = certify.Timed(screened, [((5.0, 6.0), configs[0]), ((4.0, 7.0), configs[1])], [], 0.0)

    def check_entry(kernel, setting, dtype, examples, profile_name):
        return check.EntryResult(kernel, dtype, setting.domain.describe(), dict(setting.config), examples=examples)

    monkeypatch.setattr(certify.check, "check_entry", check_entry)
    proof = certify.prove_task("interpreter", timed, 3, "ci").entry.proof
    assert (proof.time_best_us, proof.time_median_us, proof.candidates_tried) == (5.0, 6.0, 7)
    assert [(r.config, r.reason) for r in proof.rejected] == [(configs[2], "wrong_result"), (configs[1], "slower")]


def test_where_takes_an_unbounded_entry_only_for_an_unbounded_range():
    """Planted: certify.within takes a domain unbounded above as inside any range that starts at or below its low
    end: `certify --where M=1:64` then re-certified the interpreter's entry over every M."""
    from conformance import certify

    def task(hi):
        return certify.Task("silu_mul", "fp16", (("M", 1, hi), ("I", 1, None)))

    assert certify.within(task(64), {"M": (1, 64)}) and certify.within(task(None), {"M": (1, None)})
    assert not certify.within(task(None), {"M": (1, 64)}) and not certify.within(task(65), {"M": (1, 64)})
    assert not certify.within(task(64), {"I": (1, 4096)})  # I unbounded, the range bounded


# -- every shipped setting checked where the check runs -----------------------------------------------------


def _shipping(**classes):
    """A stand-in for loaded tables: class -> silu_mul entries [(dtypes, M range, config)]."""
    from types import SimpleNamespace

    from neurobrix.schema import Domain, Setting, SettingsIndex

    def index(class_id, kernel):
        entries = [Setting(Domain(d, (("M", *m), ("I", 64, 64))), c) for d, m, c in classes[class_id]]
        return SettingsIndex.of(kernel, class_id, ("M", "I"), ("pow2", "exact"), {}, entries, f"{class_id}.json")

    return SimpleNamespace(classes=dict.fromkeys(classes), kernels=lambda class_id: ("silu_mul",), index=index)


A = {"BLOCK_M": 8, "BLOCK_I": 32, "num_warps": 4}
B = {"BLOCK_M": 4, "BLOCK_I": 16, "num_warps": 4}


def test_a_setting_the_class_holds_in_another_dtype_only_is_still_checked_in_this_one():
    """Planted: shipped.targets skips a shipped setting wherever the class's own tables hold it in any dtype: the
    interpreter holds A for fp32 only, so A as another class ships it (fp16) was never run in fp16."""
    from conformance import shipped

    loaded = _shipping(interpreter=[(("fp32",), (1, None), A), (("fp16",), (1, None), B)], g=[(("fp16",), (1, 1), A)])
    found, not_run = shipped.targets("interpreter", loaded, True)
    assert [(t.kernel, t.setting.config, t.dtype) for t in found] == [("silu_mul", A, "fp16")] and not not_run


def test_a_setting_shipped_in_several_dtypes_is_checked_in_each():
    """Planted: shipped.shipped_settings keeps the dtypes of a setting's first entry only: a setting another class
    ships for bf16 and, in a later entry, for fp16 was checked in bf16 alone on a GPU class that runs both."""
    from conformance import shipped

    loaded = _shipping(
        g=[(("bf16",), (1, 1), B), (("fp16",), (1, 1), B), (("bf16", "fp16"), (2, 2), A)],
        h=[(("bf16",), (1, 1), A), (("fp16",), (2, 2), A)],
    )
    found, _ = shipped.targets("h", loaded, False)
    assert sorted((t.setting.config["BLOCK_M"], t.dtype) for t in found) == [(4, "bf16"), (4, "fp16")]


# -- which GPU classes a change affects ---------------------------------------------------------------------


def test_a_kernel_change_names_only_the_gpu_classes_that_have_kernel_tables():
    """Planted: affected.affected_by names every GPU class for a kernel change, a class that has only its class.yaml
    too: its GPU job then fails (`check` refuses a class without tables) on every such pull request."""
    from conformance import affected

    classes = {"a": affected.GPUClassInfo("a", True), "b": affected.GPUClassInfo("b", False)}
    assert affected.affected_by(["neurobrix/ops/linear.py"], classes).classes == ["a"]
    assert affected.affected_by(["tables/b/class.yaml"], classes).classes == ["b"]


@pytest.mark.parametrize("path", ["neurobrix/tables.pyi", "neurobrix/opset.py", "conformance-notes.md"])
def test_a_path_that_only_begins_like_a_kernel_path_affects_nothing(path):
    """Planted: affected.touches_kernels matches every kernel path as a prefix of the changed path, a file's too and a
    folder's without its slash: a stub neurobrix/tables.pyi sent every GPU class to its runner."""
    from conformance import affected

    classes = {"a": affected.GPUClassInfo("a", True)}
    assert affected.affected_by([path], classes).classes == []
    assert affected.affected_by(["neurobrix/tables.py", "conformance/x.py"], classes).classes == ["a"]
