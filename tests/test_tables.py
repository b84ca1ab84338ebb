"""neurobrix.tables and neurobrix.schema: locating, verifying, validating, the bucket lookup, and
neurobrix.plan's resolution of a generation's calls (every missing one named at once)."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from conftest import REPO, follow, retrack
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_tables import CONFIGS, write_gpu_class, write_tables

from neurobrix import tables
from neurobrix.errors import MissingEntryError, TablesError, UsageError
from neurobrix.schema import Domain, Setting, SettingsIndex


def lookup(dtype="fp32", **shape):
    index = tables.load().index("interpreter", "demo")
    entry = index.lookup(dtype, tuple(shape[d] for d in index.key))
    return None if entry is None else dict(entry.config)


def edit_yaml(path, change):
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


# -- the lookup ---------------------------------------------------------------------------------


def test_lookup_is_exact_containment(fixture_tables):
    assert lookup(M=1, N=1) == {"BLOCK_N": 64, "num_warps": 4}
    assert lookup(M=16, N=4096) == {"BLOCK_N": 64, "num_warps": 4}  # both range ends are inclusive
    assert lookup(M=17, N=4096) == {"BLOCK_N": 128, "num_warps": 8}
    assert lookup(dtype="fp16", M=64, N=7) == {"BLOCK_N": 128, "num_warps": 8}
    assert lookup(M=10**6, N=10**6) == {"BLOCK_N": 256, "num_warps": 8}  # hi: null is unbounded
    assert lookup(dtype="bf16", M=6, N=4096) == {"BLOCK_N": 32, "num_warps": 2}  # a bucket: hashed


def test_a_shape_outside_every_domain_is_never_given_the_nearest(fixture_tables):
    # fp16 is certified up to M=64 only: M=65 is right next to an entry, and still has none.
    assert lookup(dtype="fp16", M=65, N=128) is None
    assert lookup(dtype="bf16", M=9, N=4096) is None and lookup(dtype="bf16", M=6, N=4095) is None
    assert lookup(dtype="bf16", M=1, N=1) is None  # a dtype no domain has
    assert lookup(M=0, N=1) is None


def test_bucketed_entries_are_found_by_bucket_without_a_scan():
    entries = tuple(
        Setting(Domain(("bf16",), (("M", lo, hi), ("N", 64, 64))), {"X": lo})
        for lo, hi in ((1, 1), (2, 2), (3, 4), (5, 8), (9, 16))
    )
    index = SettingsIndex.of("k", "c", ("M", "N"), ("pow2", "exact"), {}, entries, "k.json")
    assert not index._wide and len(index._by_bucket) == 5
    assert [dict(index.lookup("bf16", (m, 64)).config)["X"] for m in (1, 2, 3, 4, 7, 16)] == [1, 2, 3, 3, 5, 9]
    assert index.lookup("bf16", (17, 64)) is None and index.lookup("bf16", (3, 65)) is None


def test_overlapping_buckets_are_refused():
    entries = (
        Setting(Domain(("bf16",), (("M", 3, 4), ("N", 64, 64))), {"X": 1}),
        Setting(Domain(("bf16", "fp16"), (("M", 3, 4), ("N", 64, 64))), {"X": 2}),
    )
    with pytest.raises(TablesError, match=r"entries\[0\] .* and entries\[1\] .* overlap"):
        SettingsIndex.of("k", "c", ("M", "N"), ("pow2", "exact"), {}, entries, "k.json")


def test_a_wide_entry_over_a_bucketed_one_is_refused():
    """A wide entry (not one bucket: found by containment) covering a bucket that a hashed entry holds is refused:
    otherwise that bucket would silently get the hashed setting and its neighbours the wide one."""
    entries = (
        Setting(Domain(("bf16",), (("M", 3, 4), ("N", 64, 64))), {"X": 1}),
        Setting(Domain(("bf16",), (("M", 1, None), ("N", 64, 64))), {"X": 2}),
    )
    with pytest.raises(TablesError, match=r"entries\[0\] .* and entries\[1\] .* overlap"):
        SettingsIndex.of("k", "c", ("M", "N"), ("pow2", "exact"), {}, entries, "k.json")


def test_domains_sharing_only_an_end_value_overlap():
    """Ranges are inclusive at both ends, so [1, 16] and [16, 64] overlap at 16 and are refused (a lookup at 16
    would have two answers)."""
    a = Domain(("fp32",), (("M", 1, 16), ("N", 1, None)))
    b = Domain(("fp32",), (("M", 16, 64), ("N", 1, None)))
    assert a.overlaps(b) and b.overlaps(a)
    with pytest.raises(TablesError, match=r"entries\[0\] .* and entries\[1\] .* overlap"):
        SettingsIndex.of(
            "k", "c", ("M", "N"), ("pow2", "exact"), {}, (Setting(a, {"X": 1}), Setting(b, {"X": 2})), "k.json"
        )


# -- the plan: every call of a generation resolved before loading ---------------------------------


def test_missing_settings_are_refused_all_at_once_naming_everything(tmp_path, monkeypatch):
    from neurobrix.plan import resolve

    only_small = {
        "linear": [({"M": [1, 4]}, CONFIGS["linear"][0][1])],
        "silu_mul": [({"I": [1, 8]}, CONFIGS["silu_mul"][0][1])],
    }
    loaded = tables.load(write_tables(tmp_path / "small", only_small))
    calls = {
        ("linear", "fp32", (5, 4, 3)),
        ("linear", "fp32", (4, 4, 3)),
        ("silu_mul", "fp32", (2, 9)),
        ("rms_norm", "fp32", (2, 8)),
    }
    with pytest.raises(MissingEntryError) as err:
        resolve(calls, loaded, "interpreter", " --limit prompt=5:5")
    message = str(err.value)
    assert err.value.exit_code == 4
    for part in (
        "2 kernel call(s) have no certified setting",
        "linear             fp32 M=5, N=4, K=3",
        "silu_mul           fp32 M=2, I=9",
        str(tmp_path / "small" / "interpreter" / "linear.json"),
        "python -m conformance certify --class interpreter --kernels linear silu_mul --dtypes fp32 "
        "--limit prompt=5:5 --only-missing",
    ):
        assert part in message, part
    assert "M=4, N=4" not in message and "rms_norm" not in message


def test_a_kernel_without_any_table_is_named_not_skipped(tmp_path):
    """A class with no settings index at all for a kernel the generation calls: preflight refuses, naming the
    call, the missing table and the certify command (a skipped call would only fail at launch, after loading)."""
    from neurobrix.plan import resolve

    root = write_tables(tmp_path / "t")
    for name in ("rms_norm.json", "rms_norm.proofs.yaml"):
        (root / "interpreter" / name).unlink()
    retrack(root)
    loaded = tables.load(root)
    assert "rms_norm" not in loaded.kernels("interpreter")
    calls = {("linear", "fp32", (2, 8, 8)), ("rms_norm", "fp32", (2, 8))}
    with pytest.raises(MissingEntryError) as err:
        resolve(calls, loaded, "interpreter")
    message = str(err.value)
    assert "1 kernel call(s) have no certified setting" in message
    assert "rms_norm           fp32 M=2, N=8" in message
    assert f"{root / 'interpreter' / 'rms_norm.json'}: no table" in message
    assert "--kernels rms_norm --dtypes fp32" in message


def test_a_plan_holds_each_call_with_its_setting(tmp_path):
    from neurobrix.plan import resolve

    loaded = tables.load(write_tables(tmp_path / "t"))
    plan = resolve({("linear", "fp16", (2, 8, 8)), ("linear", "fp16", (9, 8, 8))}, loaded, "interpreter")
    assert plan.settings[("linear", "fp16", (2, 8, 8))] == CONFIGS["linear"][0][1]
    assert plan.settings[("linear", "fp16", (9, 8, 8))] == CONFIGS["linear"][1][1]


@pytest.mark.parametrize(
    "key, first",
    [
        ([["M", "exact"], ["N", "exact"], ["K", "exact"]], "M"),
        # same bucket rules, N and K swapped: a call's (M, N, K) looked up in it would read N as K
        ([["M", "pow2"], ["K", "exact"], ["N", "exact"]], "K"),
    ],
    ids=["other rules", "dimensions reordered"],
)
def test_an_index_keyed_differently_from_the_op_is_refused(tmp_path, key, first):
    """An index whose key differs from the op's (its bucket rules, or the order of its dimensions) is refused
    by preflight as certified for another neurobrix."""
    from neurobrix.plan import resolve

    root = write_tables(tmp_path / "t")
    edit_json(root / "interpreter" / "linear.json", lambda d: d.update(key=key))
    follow(root, "interpreter", "linear")  # certified so (for another neurobrix): its record proves these domains
    retrack(root)
    with pytest.raises(TablesError, match=rf"keyed by .*'{first}', 'exact'.* certified for another neurobrix"):
        resolve({("linear", "fp32", (2, 8, 4))}, tables.load(root), "interpreter")


@pytest.mark.parametrize("variant", ["bogus", None])
def test_a_setting_of_a_variant_the_kernel_does_not_have_is_refused_before_loading(tmp_path, variant):
    """A linear setting naming no variant, or one this neurobrix does not have: refused by preflight (exit 3),
    naming the file and the call, rather than at the kernel's first launch after the weights were loaded."""
    from neurobrix.plan import resolve

    root = write_tables(tmp_path / "t")

    def edit(d):
        config = d["configs"][0]
        if variant is None:
            del config["variant"]
        else:
            config["variant"] = variant

    edit_json(root / "interpreter" / "linear.json", edit)
    follow(root, "interpreter", "linear")  # its record proves the setting: the check is preflight's
    retrack(root)
    loaded = tables.load(root)
    with pytest.raises(TablesError, match=rf"linear\.json: the setting for linear .* names variant {variant!r}"):
        resolve({("linear", "fp32", (2, 8, 4)), ("linear", "fp32", (9, 8, 4))}, loaded, "interpreter")


@pytest.mark.parametrize(
    "kernel, change, problem",
    [
        ("rms_norm", {"BLOCK_N": 64}, "holds BLOCK_N, which this neurobrix's 'rms_norm' kernel does not have"),
        ("rms_norm", {"variant": "gemv"}, "holds variant, which"),  # an op without variants
        ("silu_mul", {"BLOCK_I": None}, "lacks BLOCK_I, which this neurobrix's 'silu_mul' kernel needs"),
        ("linear", {"SPLIT_K": 2}, "holds SPLIT_K, which"),  # a parameter of another variant (tiled here)
        ("linear", {"GROUP_M": None}, "lacks GROUP_M"),
        ("linear", {"BLOCK_M": 32.0}, "holds BLOCK_M=32.0, where this neurobrix's 'linear' kernel takes whole"),
        ("rms_norm", {"num_warps": 4.0}, "holds num_warps=4.0, where"),
    ],
)
def test_a_setting_with_parameters_its_kernel_does_not_take_is_refused_first(tmp_path, kernel, change, problem):
    """A setting holding a meta-parameter this neurobrix's kernel does not have (which Triton's interpreter
    ignores: the kernel would run another setting than the one certified) or lacking one it needs is refused by
    preflight (exit 3), naming the file and the call, rather than run or refused after the weights were loaded."""
    from neurobrix.plan import resolve

    root = write_tables(tmp_path / "t")

    def edit(d):
        for name, value in change.items():
            if value is None:
                del d["configs"][-1][name]
            else:
                d["configs"][-1][name] = value

    edit_json(root / "interpreter" / f"{kernel}.json", edit)
    follow(root, "interpreter", kernel)  # its record proves the setting: the check is preflight's
    retrack(root)
    calls = {"rms_norm": ("rms_norm", "fp32", (9, 8)), "silu_mul": ("silu_mul", "fp32", (9, 8))}
    call = calls.get(kernel, ("linear", "fp32", (9, 8, 4)))
    with pytest.raises(TablesError) as err:
        resolve({call}, tables.load(root), "interpreter")
    assert f"{kernel}.json: the setting for {kernel}" in str(err.value) and problem in str(err.value)
    assert "certified for another neurobrix. Re-certify: python -m conformance certify --class interpreter" in str(
        err.value
    )
    assert err.value.exit_code == 3


def test_every_certified_setting_is_one_its_kernel_takes():
    """The shipped tables hold only settings their kernels take whole (no parameter missing or unknown)."""
    from neurobrix.ops import SPECS

    loaded = tables.load(REPO / "tables")
    for class_id in loaded.classes:
        for kernel in loaded.kernels(class_id):
            for config in loaded.index(class_id, kernel).configs:
                assert SPECS[kernel].setting_problem(config) is None, (class_id, kernel, config)


def test_a_plan_launches_with_the_class_launch_features(tmp_path):
    """``launch: [pdl]`` in class.yaml is what makes a plan (and so a run) launch with
    programmatic dependent launch; a class without it launches plainly."""
    from neurobrix.ops import certified
    from neurobrix.plan import resolve

    root = write_tables(tmp_path / "t")
    call = {("linear", "fp16", (2, 8, 8))}
    assert resolve(call, tables.load(root), "interpreter").pdl is False
    assert resolve(call, tables.load(root), "interpreter").ops().name == "triton"
    write_gpu_class(root)  # a Hopper class: the interpreter class lists no launch feature
    loaded = tables.load(root)
    plan = resolve(call, loaded, "fake-hopper")
    assert plan.pdl is True and certified(plan.settings, plan.pdl).name == "triton+pdl"
    assert loaded.classes["fake-hopper"].launch == ("pdl",)


def test_an_unknown_launch_feature_is_refused(fixture_tables):
    edit_yaml(fixture_tables / "fake-gpu" / "class.yaml", lambda d: d.update(launch=["pdl", "warp-magic"]))
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"fake-gpu/class.yaml: field 'launch"):
        tables.load()


def test_unknown_class_is_a_usage_error(tmp_path):
    from neurobrix.plan import resolve

    with pytest.raises(UsageError, match="unknown GPU class 'nosuch'"):
        resolve(set(), tables.load(write_tables(tmp_path / "t")), "nosuch")


def test_an_unplanned_call_is_refused_at_launch_never_guessed():
    import torch

    from neurobrix.ops import UnplannedCallError, certified

    ops = certified({("silu_mul", "fp32", (2, 4)): CONFIGS["silu_mul"][0][1]})
    assert ops.silu_mul(torch.ones(2, 8)).shape == (2, 4)
    with pytest.raises(UnplannedCallError, match="silu_mul fp32 M=3, I=4: this call was not in the certified plan"):
        ops.silu_mul(torch.ones(3, 8))


# -- locating -----------------------------------------------------------------------------------


def test_source_checkout_tables_are_found_without_the_env_var(monkeypatch):
    monkeypatch.delenv(tables.ENV_VAR, raising=False)
    location = tables.locate()
    assert location.origin == "source checkout"
    assert (location.root / "TRACKED.yaml").is_file()


def test_env_var_pointing_nowhere_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv(tables.ENV_VAR, str(tmp_path / "missing"))
    with pytest.raises(TablesError, match=r"NEUROBRIX_TABLES=.*missing is not a folder"):
        tables.load()


def test_missing_tracked_list(fixture_tables):
    (fixture_tables / "TRACKED.yaml").unlink()
    with pytest.raises(TablesError, match="tracked-file list is missing"):
        tables.load()


# -- integrity ----------------------------------------------------------------------------------


def test_missing_table_file(fixture_tables):
    (fixture_tables / "interpreter" / "demo.json").unlink()
    with pytest.raises(TablesError, match=r"interpreter/demo.json: tracked but missing"):
        tables.load()


def test_untracked_table_file(fixture_tables):
    (fixture_tables / "interpreter" / "extra.json").write_text("{}")
    with pytest.raises(TablesError, match=r"interpreter/extra.json: present but not in the tracked list"):
        tables.load()


def test_altered_bytes_same_size(fixture_tables):
    path = fixture_tables / "interpreter" / "demo.json"
    text = path.read_text()
    path.write_text(text.replace('"BLOCK_N": 64', '"BLOCK_N": 32', 1))
    assert len(path.read_text()) == len(text)
    with pytest.raises(TablesError, match=r"demo.json: sha256 differs"):
        tables.load()


def test_altered_proofs_are_refused_though_run_never_parses_them(fixture_tables):
    path = fixture_tables / "interpreter" / "demo.proofs.yaml"
    path.write_text(path.read_text().replace("worst_error_ratio: 0.25", "worst_error_ratio: 0.24"))
    with pytest.raises(TablesError, match=r"demo.proofs.yaml: sha256 differs"):
        tables.load()


def test_altered_size(fixture_tables):
    path = fixture_tables / "interpreter" / "demo.json"
    path.write_text(path.read_text() + "\n")
    with pytest.raises(TablesError, match=r"demo.json: size \d+ bytes, tracked as \d+"):
        tables.load()


def test_every_problem_is_reported_at_once(fixture_tables):
    (fixture_tables / "interpreter" / "demo.json").unlink()
    (fixture_tables / "fake-gpu" / "stray.txt").write_text("x")
    with pytest.raises(TablesError) as err:
        tables.load()
    assert "demo.json: tracked but missing" in str(err.value)
    assert "stray.txt: present but not in the tracked list" in str(err.value)


def test_tampered_tracked_list_entry(fixture_tables):
    edit_yaml(fixture_tables / "TRACKED.yaml", lambda d: d["files"][0].update(sha256="0" * 64))
    with pytest.raises(TablesError, match="sha256 differs"):
        tables.load()


@pytest.mark.parametrize("where", ["stray.json", "interpreter/old/demo.json"])
def test_an_untracked_file_anywhere_under_the_tables_is_refused(fixture_tables, where):
    """Not only beside the class files: a file at the top of the tables folder, or in a folder inside a class
    folder, is untracked too and refused."""
    path = fixture_tables / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    with pytest.raises(TablesError, match=rf"{where}: present but not in the tracked list"):
        tables.load()


def test_a_tracked_file_replaced_by_a_symlink_is_refused(fixture_tables, tmp_path):
    """A symlink is refused even with the tracked bytes behind it: what it points to lies outside the verified
    folder (and can change after the check)."""
    path = fixture_tables / "interpreter" / "demo.json"
    target = tmp_path / "elsewhere.json"
    target.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(target)
    with pytest.raises(TablesError, match=r"interpreter/demo.json: tracked but missing \(or not a regular file\)"):
        tables.load()


def test_an_untracked_symlink_is_refused(fixture_tables, tmp_path):
    """A symlink nobody tracked, to a file outside the tables, is an untracked table file like any other."""
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    (fixture_tables / "interpreter" / "extra.json").symlink_to(target)
    with pytest.raises(TablesError, match=r"interpreter/extra.json: present but not in the tracked list"):
        tables.load()


def test_a_tracked_file_with_another_wheel_path_is_refused(fixture_tables):
    """TRACKED.yaml says where each file lies inside the wheel; an entry naming another place is refused."""
    edit_yaml(fixture_tables / "TRACKED.yaml", lambda d: d["files"][0].update(wheel_path="neurobrix/other.yaml"))
    with pytest.raises(TablesError, match=r"wheel path 'neurobrix/other.yaml' should be neurobrix/_tables/"):
        tables.load()


def test_a_tracked_path_leaving_the_tables_folder_is_refused():
    """A tracked-list path with a '..' part would have the check hash a file outside the tables folder: the list
    itself is refused, naming the entry (the release gate reads lists with the same function)."""
    from neurobrix.schema import parse_tracked

    item = {"wheel_path": "neurobrix/_tables/x", "sha256": "0" * 64, "size": 0}
    for path in ("../outside.json", "interpreter/../../outside.json"):
        with pytest.raises(TablesError, match=r"files\[0\]\.path': unsafe path"):
            parse_tracked({"format": 1, "files": [{"path": path, **item}]}, "TRACKED.yaml")


def test_an_index_altered_after_the_folder_check_is_refused(fixture_tables):
    """Indexes are read on demand, after load() verified every hash: the bytes parsed are hashed again, so a file
    changed in between is refused rather than used."""
    loaded = tables.load()
    path = fixture_tables / "interpreter" / "demo.json"
    path.write_text(path.read_text().replace('"BLOCK_N": 64', '"BLOCK_N": 32', 1))
    with pytest.raises(TablesError, match=r"demo.json: changed while the tables were being loaded"):
        loaded.index("interpreter", "demo")


@pytest.mark.parametrize(
    "name, message",
    [
        ("demo.proofs.yaml", "demo.json: has no demo.proofs.yaml beside it"),
        ("demo.json", "demo.proofs.yaml: has no demo.json beside it"),
    ],
)
def test_an_index_and_its_proofs_ship_together(fixture_tables, name, message):
    (fixture_tables / "interpreter" / name).unlink()
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=message):
        tables.load()


@pytest.mark.parametrize("name", ["interpreter/notes.txt", "other/class.yaml/notes"])
def test_a_file_that_is_no_table_is_refused(fixture_tables, name):
    """Beside the class files, or two folders deep under a folder named like one (refused, not a traceback)."""
    (fixture_tables / name).parent.mkdir(parents=True, exist_ok=True)
    (fixture_tables / name).write_text("x")
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=rf"{name}: not a class.yaml, a <kernel>.json or a <kernel>.proofs.yaml"):
        tables.load()


# -- parsing and schema -------------------------------------------------------------------------


def test_corrupt_json_names_file_and_line(fixture_tables):
    path = fixture_tables / "interpreter" / "demo.json"
    path.write_text(path.read_text().replace('"kernel": "demo",', '"kernel": "demo"', 1))
    retrack(fixture_tables)
    with pytest.raises(TablesError) as err:
        tables.load().index("interpreter", "demo")
    assert re.search(r"interpreter/demo\.json:\d+:\d+: not valid JSON", str(err.value))


def test_corrupt_yaml_names_file_and_line(fixture_tables):
    path = fixture_tables / "interpreter" / "demo.proofs.yaml"
    lines = path.read_text().splitlines()
    lines[4] = "class: [interpreter"  # unclosed flow sequence
    path.write_text("\n".join(lines) + "\n")
    retrack(fixture_tables)
    with pytest.raises(TablesError) as err:
        tables.load().proofs("interpreter", "demo")
    assert re.search(r"interpreter/demo\.proofs\.yaml:\d+:\d+: not valid YAML", str(err.value))


@pytest.mark.parametrize(
    "tag, error", [("!!int abc", "ValueError"), ("!!bool 431", "KeyError"), ("!!timestamp 2026-13-01", "ValueError")]
)
def test_a_yaml_tag_its_constructor_cannot_read_names_the_file(fixture_tables, tag, error):
    """PyYAML's safe constructors raise ValueError or KeyError, not a YAMLError, for a tagged value they
    cannot read; the tracked-file list (the one file no hash covers) so edited is refused, naming it (since round 17
    a number, boolean or date not spelt as JSON spells it is refused first, naming its line, before the constructor's
    error)."""
    path = fixture_tables / tables.TRACKED_NAME
    path.write_text(path.read_text().replace("size: ", f"size: {tag} #", 1))
    with pytest.raises(
        TablesError, match=rf"{re.escape(str(path))}(: not valid YAML: {error}|:\d+:\d+: not valid YAML)"
    ):
        tables.load()


@pytest.mark.parametrize("text", ["1" * 4301, "[" * 100_000 + "]" * 100_000], ids=["long number", "deep nesting"])
def test_json_that_json_refuses_other_than_by_syntax_names_the_file(fixture_tables, text):
    path = fixture_tables / "interpreter" / "demo.json"
    path.write_text(path.read_text().replace('"kernel": "demo",', f'"x": {text}, "kernel": "demo",', 1))
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"interpreter/demo\.json: not valid JSON: "):
        tables.load().index("interpreter", "demo")


def test_a_key_named_twice_in_a_table_file_is_refused(fixture_tables):
    """json and PyYAML keep the last of two equal keys silently: a reviewer reading the file's first value and
    the engine running its last. Refused in an index, in class.yaml and in the tracked-file list, naming the file."""
    index = fixture_tables / "interpreter" / "demo.json"
    index.write_text(index.read_text().replace('"kernel": "demo",', '"kernel": "demo", "kernel": "demo",', 1))
    retrack(fixture_tables)
    with pytest.raises(
        TablesError, match=r"interpreter/demo\.json: not valid JSON: an object names the key\(s\) 'kernel' twice"
    ):
        tables.load().index("interpreter", "demo")
    class_yaml = fixture_tables / "interpreter" / tables.CLASS_NAME
    lines = class_yaml.read_text().splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith("class:"))
    class_yaml.write_text("\n".join(lines[: first + 1] + [lines[first]] + lines[first + 1 :]) + "\n")
    retrack(fixture_tables)
    with pytest.raises(
        TablesError, match=r"interpreter/class\.yaml:\d+:\d+: not valid YAML: found the key 'class' twice"
    ):
        tables.load()
    tracked = fixture_tables / tables.TRACKED_NAME
    text = tracked.read_text()
    size = re.search(r"\n( +)size: (\d+)\n", text)
    assert size is not None
    tracked.write_text(text.replace(size.group(0), size.group(0) + f"{size.group(1)}size: {size.group(2)}\n", 1))
    with pytest.raises(TablesError, match=r"TRACKED\.yaml:\d+:\d+: not valid YAML: found the key 'size' twice"):
        tables.load()


INDEX_CASES = [
    # an entry is [dtypes, lo, hi of M, lo, hi of N, config position]
    (lambda d: d["entries"][1].__setitem__(1, 65), r"entries\[1\]\.M': expected integers 1 <= lo <= hi .*\[65, 64\]"),
    (lambda d: d["entries"][1].__setitem__(1, "17-64"), r"entries\[1\]\[1\]': .*must be integer or null"),
    (lambda d: d["entries"][1].__setitem__(1, 0), r"entries\[1\]\.M': expected integers 1 <= lo"),
    (lambda d: d["entries"][1].__setitem__(1, None), r"entries\[1\]\.M': expected integers 1 <= lo"),
    (
        lambda d: d["entries"][1].__setitem__(5, 1.0),
        r"entries\[1\]': expected integers \(or null\), got \[17, 64, 1, 4096, 1.0\]",
    ),
    (lambda d: d["entries"][1].__setitem__(1, 17.0), r"entries\[1\]': expected integers"),
    (lambda d: d["entries"][1].__setitem__(1, True), r"entries\[1\]\[1\]': .*must be integer or null"),
    (lambda d: d["entries"][1].__setitem__(2, -3), r"entries\[1\]\[2\]': .*bigger than or equal to 0"),
    (
        lambda d: d["entries"][0].insert(5, 1),
        r"entries\[0\]': has 7 items; expected 6: \[dtypes, lo and hi of each of M, N",
    ),
    (lambda d: d["entries"][0].pop(2), r"entries\[0\]': has 5 items; expected 6"),
    (lambda d: d["entries"][0].__setitem__(5, 9), r"entries\[0\]': config position 9, but the index has 4 configs"),
    (lambda d: d["entries"][3].__setitem__(5, 0), r"field 'configs': config\(s\) \[3\] belong to no entry"),
    (lambda d: d["entries"][0].__setitem__(0, "fp32"), r"entries\[0\]\[0\]': .*a list of distinct dtype names"),
    (lambda d: d["entries"][0].__setitem__(0, ["fp64"]), r"entries\[0\]\[0\]': .*a list of distinct dtype names"),
    (lambda d: d["entries"][0].__setitem__(0, ["fp32", "fp32"]), r"entries\[0\]\[0\]': .*distinct dtype names"),
    (lambda d: d["entries"][0].__setitem__(0, []), r"entries\[0\]\[0\]': .*a list of distinct dtype names"),
    (lambda d: d["entries"][2].__setitem__(5, -1), r"entries\[2\]\[5\]': .*bigger than or equal to 0"),
    (lambda d: d["entries"].__setitem__(1, {"M": 1}), r"entries\[1\]': .*must be array"),
    (lambda d: d.update(extra=1), r"\(top level\)': .*must not contain \{'extra'\}"),
    (lambda d: d.update(kernel="other"), r"field 'kernel': says 'other' but the file is named for demo"),
    (lambda d: d.update(format=3), r"field 'format': format 3 is an older layout .* reformat --class interpreter"),
    (lambda d: d.update(format=5), r"field 'format': format 5, and this NeuroBrix reads format 4 \(written by a newer"),
    (lambda d: d["stack"].pop("triton"), r"field 'stack': .*must contain \['triton'\]"),
    (lambda d: d.update(entries=[]), r"field 'entries': .*must contain at least 1 items"),
    (lambda d: d.pop("configs"), r"\(top level\)': .*must contain \['configs'\]"),
    (lambda d: d["configs"][0].clear(), r"configs\[0\]': .*must contain at least 1 properties"),
    (lambda d: d["configs"][0].update({"BLOCK-N": 3}), r"configs\[0\]': .*"),
    (lambda d: d.update(key=[["M", "pow3"], ["N", "exact"]]), r"field 'key': unknown bucket rule\(s\) 'pow3'"),
    (lambda d: d["entries"][1].__setitem__(1, 10), r"entries\[0\] .* and entries\[1\] .* overlap"),
    (lambda d: d["entries"][2].__setitem__(1, 40), r"entries\[1\] .* and entries\[2\] .* overlap"),
]


_ODD = [None, 0, -1, 1.0, True, "3", [], ["fp64"], ["fp32", "fp32"], "fp32", {"M": 1}]


@st.composite
def index_rows(draw):
    """Rows of a two-dimension index, most well formed, some with one value, length or type wrong."""
    rows = []
    for _ in range(draw(st.integers(1, 3))):
        dtypes = list(draw(st.permutations(["fp32", "fp16", "bf16"]))[: draw(st.integers(1, 3))])
        m_lo, n_lo = draw(st.integers(0, 8)), draw(st.integers(1, 8))
        m_hi = draw(st.one_of(st.none(), st.integers(max(m_lo, 1), m_lo + 4)))
        row = [dtypes, m_lo, m_hi, n_lo, draw(st.integers(n_lo, n_lo + 4)), draw(st.integers(-1, 2))]
        change = draw(st.sampled_from(["none"] * 5 + ["value"] * 3 + ["below", "drop", "add"]))
        if change == "below":  # hi under lo
            row[draw(st.sampled_from([2, 4]))] = row[1] - 1
        elif change == "value":
            row[draw(st.integers(0, 5))] = draw(st.sampled_from(_ODD))
        elif change == "drop":
            row.pop(draw(st.integers(0, 5)))
        elif change == "add":
            row.append(draw(st.sampled_from([1, None])))
        rows.append(row)
    return rows


@settings(max_examples=500, deadline=None)
@given(entries=index_rows(), configs=st.integers(1, 3))
def test_the_columnar_row_check_accepts_what_the_schema_and_the_row_checks_accept(entries, configs):
    """Run checks an index's rows column by column (the full schema's per-element code cost a third of
    the class's settings load); it must accept exactly the rows the "index" schema and the row-by-row
    checks accept, on rows of every kind of wrong value."""
    from neurobrix import schema

    key = ("M", "N")
    data = {
        "format": schema.INDEX_FORMAT,
        "kernel": "demo",
        "class": "interpreter",
        "key": [["M", "pow2"], ["N", "exact"]],
        "stack": {"torch": "2", "triton": "3"},
        "configs": [{"X": i} for i in range(configs)],
        "entries": entries,
    }
    fast = schema._rows_at_once(entries, len(key), configs)
    try:
        schema.validate("index", data, "demo.json")
        slow = schema._rows_one_by_one(entries, key, tuple(data["configs"]), "demo.json")
    except TablesError:
        slow = None
    assert fast == slow


@pytest.mark.parametrize("change, message", INDEX_CASES)
def test_index_schema_violation_names_the_field(fixture_tables, change, message):
    edit_json(fixture_tables / "interpreter" / "demo.json", change)
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=message) as err:
        tables.load().index("interpreter", "demo")
    assert "interpreter/demo.json" in str(err.value)


PROOF_CASES = [
    (lambda d: d["entries"][0]["proof"].pop("examples"), r"entries\[0\]\.proof': .*must contain .*examples"),
    (
        lambda d: d["entries"][0]["proof"].update(worst_error_ratio=1.5),
        r"worst_error_ratio': .*smaller than or equal to 1",
    ),
    (lambda d: d["entries"][0]["proof"].update(examples=True), r"proof\.examples': .*must be integer"),
    (
        lambda d: d["entries"][0]["proof"].update(rejected=["meh: BLOCK_N=64: x"]),
        r"rejected\[0\]': .*must match pattern",
    ),
    (lambda d: d["provenance"].pop("triton"), r"field 'provenance': .*must contain"),
    (
        lambda d: d["entries"][0].update(config={"BLOCK_N": 65, "num_warps": 4}),
        r"entries\[0\]': differs from entry 0 of its index",
    ),
    (lambda d: d["entries"].pop(), r"field 'entries': holds 3 entries, its index .* 4"),
    (lambda d: d["provenance"].update(triton="3.8.0"), r"field 'provenance': stack .* differs from its index"),
]


@pytest.mark.parametrize("change, message", PROOF_CASES)
def test_proofs_schema_violation_names_the_field(fixture_tables, change, message):
    edit_yaml(fixture_tables / "interpreter" / "demo.proofs.yaml", change)
    retrack(fixture_tables)
    loaded = tables.load()
    if "holds 3 entries" in message:  # the last entry's proof gone: run refuses it too (strict round 29)
        with pytest.raises(
            TablesError, match=r"demo\.json: entry 3 .* not proven: .* proves 3 entries, this index holds"
        ):
            loaded.index("interpreter", "demo")
    elif "provenance" in message:  # the stack its proofs were made on, none or not its index's: run refuses it too
        with pytest.raises(TablesError, match=r"demo\.proofs\.yaml: (field 'provenance'|its proofs were made on)"):
            loaded.index("interpreter", "demo")  # (strict round 30)
    else:  # a proof the schema, its checks or its entry refuse: run refuses the record too (strict round 56)
        with pytest.raises(TablesError, match=r"interpreter/demo\.proofs\.yaml: ") as err:
            loaded.index("interpreter", "demo")
        assert "\n" not in str(err.value)
    with pytest.raises(TablesError, match=message) as err:
        loaded.proofs("interpreter", "demo")
    assert "interpreter/demo.proofs.yaml" in str(err.value)
    assert [p.path for p in tables.verify_all(loaded)] == ["interpreter/demo"]


def test_a_config_position_one_past_the_last_config_is_refused(fixture_tables):
    """An entry pointing at configs[len(configs)] (one past the end) is refused when the index is read, naming the
    entry, rather than failing with an IndexError at the lookup that lands on it."""
    edit_json(fixture_tables / "interpreter" / "demo.json", lambda d: d["entries"][3].__setitem__(5, 4))
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"entries\[3\]': config position 4, but the index has 4 configs"):
        tables.load().index("interpreter", "demo")


def test_a_class_with_an_unknown_device_fact_is_refused(fixture_tables):
    """A match fact the engine does not compare (a typo, or a fact of a newer format) would be ignored, so the class
    would match devices it does not describe: class.yaml refuses it."""
    edit_yaml(fixture_tables / "fake-gpu" / "class.yaml", lambda d: d["match"].update(memory_gib=141))
    retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"fake-gpu/class.yaml: field 'match'"):
        tables.load()


def test_class_schema_violation(fixture_tables):
    edit_yaml(fixture_tables / "fake-gpu" / "class.yaml", lambda d: d["match"].update(compute_capability=[9]))
    retrack(fixture_tables)
    # the field itself, since walk-through round 48 (it was "field 'match': ... exactly by one definition")
    with pytest.raises(TablesError, match=r"fake-gpu/class.yaml: field 'match.compute_capability': .* 2 items"):
        tables.load()


@pytest.mark.parametrize("file", ["interpreter/class.yaml", "TRACKED.yaml"])
def test_unknown_format_version(fixture_tables, file):
    edit_yaml(fixture_tables / file, lambda d: d.update(format=7))
    if file != "TRACKED.yaml":
        retrack(fixture_tables)
    with pytest.raises(TablesError, match=r"field 'format': format 7, and this NeuroBrix reads format 1 \(written by"):
        tables.load()


def test_rejected_line_round_trips():
    from neurobrix.schema import Rejected, rejected_line

    for r in (
        Rejected({"BLOCK_N": 16, "variant": "gemv", "fused": True, "scale": 0.5}, "slower", "12.1 us: vs 10"),
        Rejected({"num_warps": 4}, "crashed", ""),
    ):
        assert rejected_line(r.render()) == r
    with pytest.raises(ValueError, match="cannot be written as one line"):
        Rejected({"name": "two words"}, "slower", "").render()


def test_kernel_table_without_class_yaml(fixture_tables):
    (fixture_tables / "interpreter" / "class.yaml").unlink()
    retrack(fixture_tables)
    with pytest.raises(TablesError, match="its folder has no class.yaml naming the GPU class"):
        tables.load()


def test_the_shipped_tables_are_the_format_2_tables_re_encoded():
    """The shipped indexes and proofs hold what certify wrote before the split, entry for entry, and what it
    added since (the 32K-token catalogue: attention_chunk and the long-cache attention_decode entries; greedy_pick,
    2026-12-04)."""
    loaded = tables.load(REPO / "tables")
    h200 = loaded.proofs("nvidia-h200", "linear")
    assert len(h200.entries) == 814 and h200.provenance["triton"] == "3.6.0"
    counts = {k: len(loaded.index("nvidia-h200", k).entries) for k in loaded.kernels("nvidia-h200")}
    long_cache = sum(1 for e in loaded.index("nvidia-h200", "attention_decode").entries if e.domain.ranges[1][1] > 4096)
    assert counts["attention_chunk"] == 186 and long_cache == 180
    assert counts["greedy_pick"] == 70
    assert sum(counts.values()) - counts["attention_chunk"] - counts["greedy_pick"] - long_cache == 1870
    assert not tables.verify_all(loaded)


def test_loading_tables_does_not_import_torch(fixture_tables):
    import os
    import subprocess
    import sys

    code = (
        "import sys; from neurobrix import tables; t = tables.load(); "
        "assert t.index('interpreter', 'demo') is not None and t.proofs('interpreter', 'demo') is not None; "
        "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'imported torch/triton'"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=fixture_tables.parent, env=env)


def test_the_generated_validators_are_those_of_todays_schemas(monkeypatch):
    """neurobrix/_schemas/ holds each format's schema compiled to Python (a run compiles nothing on start);
    an edited schema with stale generated code is caught here, and the engine would compile it afresh."""
    from conformance.__main__ import main as conformance_main
    from neurobrix import schema

    assert conformance_main(["schemas", "--check"]) == 0
    for kind in schema.SCHEMAS:
        schema._validator.cache_clear()
        assert schema._validator(kind).__module__ == f"neurobrix._schemas.{kind}_format"
    monkeypatch.setitem(schema.SCHEMAS, "class", {**schema.SCHEMAS["class"], "minProperties": 5})
    schema._validator.cache_clear()
    assert schema._validator("class").__module__ != "neurobrix._schemas.class_format"  # stale: compiled now
    assert conformance_main(["schemas", "--check"]) == 1
    schema._validator.cache_clear()


def test_loading_an_index_builds_no_object_per_entry():
    """run's path (load, then one lookup per call) builds only the entries it finds: the index stays rows."""
    loaded = tables.load()
    index = loaded.index("nvidia-h200", "linear")
    assert len(index.rows) > 100 and not index._settings and "entries" not in vars(index)
    found = index.lookup("bf16", tuple(v for v in index.rows[0][1][::2]))
    assert found is index.entry(0) and list(index._settings) == [0]
