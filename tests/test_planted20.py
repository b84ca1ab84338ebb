"""Round 20 of planted bugs: small, realistic bugs planted one at a time by hand in code no earlier round planted in
(the tables' schema: device-name patterns, a class's match and launch, tracked paths, an index's rows, a proof's
numbers and rejected candidates; the plan's limits and what a hand-built plan may launch; the tables' location,
layout and YAML/JSON readers; the memory check; run's options and token limit; the bucket rules), each run against
the tests that call the function it was planted in (found by tracing the host test files' calls; seven slow files,
test_warmup, test_gpu, test_stack, test_generation_planted, test_text_round7, test_runtime_planted and test_config,
were left to a second pass over pl19, mm01 and mm03; sc01-sc13 and pl01 ran against the schema's and the plan's
test files). Each test here failed with one surviving bug and passes without it (which bug: its docstring); the
truth is fnmatch itself, the rule the function's docstring states, or a count made by hand.

Planted (id: change -> outcome with the existing tests; "caught here": a test below catches it):
  schema.py  sc01 consecutive "*" not merged, sc04 a range's last character dropped, sc06-sc09 the one-character and
             pattern meets -> caught;  sc02 "]" first in a set, sc03 "-" last in a set, sc05 an unclosed "[" read as
             a negated set -> caught here;  sc10 the vendor compared with itself -> caught here;  sc11 two interpreter
             matches never meeting -> caught here (no load reaches it: one class only may be the interpreter's)
             sc12 fnmatch for fnmatchcase -> equivalent;  sc13 a compute capability of floats or booleans, sc14 a fact
             compared by value alone -> caught here;  sc15 the proof's list not made a tuple, sc16 pdl from 10.0
             -> caught;  sc17 launch [pdl] on any backend -> caught here;  sc18 a class named interpreter of another
             backend, sc19 a backslash, sc20 a "." segment -> caught;  sc21 DEL, sc22 a name's length in characters,
             sc23 a path listed twice, sc24 a domain of hi = lo - 1 -> caught here;  sc25 the sweep's ``>``, sc27
             overlaps' ``<=`` -> caught;  sc26 the sweep in file order -> caught here;  sc28 format 2 not an older
             layout -> caught here;  sc29-sc35 an index's key and rows -> caught;  sc36 best time up to 1.5x the
             median -> caught here;  sc37, sc38, sc40, sc41, sc44 -> caught;  sc39 rejected candidates compared
             untyped -> caught here;  sc42 a rejected value split at every "=", sc43 only the stack facts present
             compared -> equivalent;  sc45 cuda "None" kept -> caught here;  sc46, sc47 -> caught
  plan.py    pl01 any compute capability looked up -> caught here;  pl02, pl04, pl05, pl07, pl08, pl10, pl12-pl15,
             pl17 -> caught;  pl03 a block of exactly Triton's largest tensor, pl06 the int32 limit one lenient, pl09
             a boolean key value, pl11 bf16 refused from two calls, pl16 num_stages 0, pl18 pdl from the GPU, not the
             class's launch -> caught here;  pl19 a segment cut at an entry's last length -> caught (only by
             tests/test_generation_planted.py; held here too)
  tables.py  tb01, tb02, tb04, tb07-tb09 -> caught;  tb03 NEUROBRIX_TABLES naming a file, tb05 an alias as a key,
             tb06 classes compared two apart -> caught here
  memory.py  mm02, mm04 -> caught;  mm01 two bytes a weight, mm03 one row of logits per batch -> caught here
  run.py     rn02, rn06 -> caught;  rn01 stream unchecked, rn03 the model's exact limit refused, rn04 the note for the
             default, rn05 a prompt filling the context with 0 asked -> caught here
  buckets.py bk01 pow2>=F of any F -> caught here
86 planted: 49 caught, 3 equivalent, 34 survived; each survivor fails a test below.

Equivalent: sc12 on POSIX fnmatch.fnmatch is fnmatchcase (os.path.normcase changes nothing; the engine runs on
Linux); sc42 the schema's line form admits no "=" in a value; sc43 a fact missing from the proofs' provenance
differs from the index's string value whether it is left out or read as None.
"""

from __future__ import annotations

import fnmatch
import itertools

import pytest

from neurobrix.schema import ClassMatch, GPUClass, classes_meet, device_problem, names_meet

HOPPER = ClassMatch("cuda", "nvidia", "NVIDIA H100*", (9, 0), 132)


# ------------------------------------------------------------------------------------------ schema.py: device names
def test_names_meet_agrees_with_fnmatch_on_brackets_at_their_edges():
    """Planted sc02, sc03, sc05: _glob_tokens reading fnmatch's bracket edge cases otherwise than fnmatch.translate:
    a "]" first in a set (``[]a]``, ``[!]a]``) closing an empty set, a "-" last (``[a-]``) read as a range (an
    IndexError), an unclosed "[" read as a negated set. Two classes whose device_name patterns one GPU matches were
    then let through as disjoint (or the reverse), or loading died. The truth: fnmatch.fnmatchcase over every short
    name of the patterns' characters (tests/test_strict_round18.py checks the plain forms)."""
    parts = ["a", "]", "-", "[]a]", "[!]a]", "[a-]", "[-a]", "[", "[!", "a[", "*"]
    patterns = sorted({"".join(p) for n in range(1, 3) for p in itertools.product(parts, repeat=n)})
    names = ["".join(p) for n in range(5) for p in itertools.product("a]-[!b", repeat=n)]
    matched = {p: sum(1 << i for i, name in enumerate(names) if fnmatch.fnmatchcase(name, p)) for p in patterns}
    wrong = [
        (first, second)
        for first, second in itertools.combinations(patterns, 2)
        if names_meet(first, second) != bool(matched[first] & matched[second])
    ]
    assert not wrong, wrong[:5]


def test_classes_of_other_vendors_never_meet():
    """Planted sc10: classes_meet comparing the first class's vendor with itself: two classes alike but for the
    vendor (one GPU cannot be of two vendors) were refused as overlapping."""
    other = ClassMatch("cuda", "amd", "NVIDIA H100*", (9, 0), 132)
    assert not classes_meet(HOPPER, other) and not classes_meet(other, HOPPER)
    assert classes_meet(HOPPER, ClassMatch("cuda", "nvidia", "NVIDIA H100 80GB*", (9, 0), 132))


def test_two_interpreter_matches_meet():
    """Planted sc11: classes_meet saying two interpreter matches never meet: the interpreter satisfies both (its
    docstring's rule); only one class may be named the interpreter's today, so no load reaches it."""
    assert classes_meet(ClassMatch("interpreter"), ClassMatch("interpreter"))
    assert not classes_meet(ClassMatch("interpreter"), HOPPER)


def test_a_compute_capability_of_floats_or_booleans_is_not_the_class_s():
    """Planted sc13: device_problem taking any tuple equal to the class's compute capability: a proof recording
    ``compute_capability: [9.0, 0]`` (or ``[9, false]``) passed for a class of (9, 0), where the device facts are
    integers (torch.cuda.get_device_capability) and True == 1, 9.0 == 9 only to Python."""
    facts = {"backend": "cuda", "vendor": "nvidia", "name": "NVIDIA H100 80GB HBM3", "multiprocessor_count": 132}
    assert device_problem(HOPPER, {**facts, "compute_capability": [9, 0]}) is None
    for odd in ([9.0, 0], [9, False], (9, 0.0)):
        problem = device_problem(HOPPER, {**facts, "compute_capability": odd})
        assert problem is not None and problem.startswith("compute_capability"), odd


def test_a_multiprocessor_count_of_another_type_is_not_the_class_s():
    """Planted sc14: device_problem comparing facts by value alone: a proof recording ``multiprocessor_count: 132.0``
    passed for a class of 132 multiprocessors, one of ``true`` for a class of 1 (the docstring's "type too")."""
    facts = {"backend": "cuda", "vendor": "nvidia", "name": "NVIDIA H100 80GB HBM3", "compute_capability": (9, 0)}
    assert device_problem(HOPPER, {**facts, "multiprocessor_count": 132}) is None
    problem = device_problem(HOPPER, {**facts, "multiprocessor_count": 132.0})
    assert problem is not None and problem.startswith("multiprocessor_count")
    one = ClassMatch("cuda", "nvidia", "NVIDIA H100*", (9, 0), 1)
    assert device_problem(one, {**facts, "multiprocessor_count": True}) is not None


# ------------------------------------------------------------------------------------------ plan.py
def test_a_compute_capability_not_listed_gets_the_most_any_gpu_has():
    """Planted pl01: shared_memory_limit looking up any class's compute capability: a class of one not in
    SHARED_MEMORY (a new GPU, 10.3) died in a KeyError where its docstring gives the most any listed GPU has."""
    from neurobrix.plan import SHARED_MEMORY, shared_memory_limit

    klass = GPUClass("new", "a new GPU", ClassMatch("cuda", "nvidia", "NVIDIA New*", (10, 3), 148), None, "x")
    assert shared_memory_limit(klass) == (max(SHARED_MEMORY.values()), "the most a block has on any GPU")
    listed = GPUClass("h", "Hopper", HOPPER, None, "x")
    assert shared_memory_limit(listed)[0] == SHARED_MEMORY[(9, 0)]


def test_a_block_of_exactly_triton_s_largest_tensor_is_within_the_limit():
    """Planted pl03: limit_problem refusing a block of exactly TRITON_MAX_TENSOR_NUMEL elements as "beyond Triton's
    largest tensor": tl.arange takes that many (Triton refuses only more), and a tile of two blocks may hold exactly
    that many too."""
    from neurobrix.plan import limit_problem, max_tensor_numel

    numel = max_tensor_numel()
    call = ("rms_norm", "fp32", (1, 4096))
    assert limit_problem("rms_norm", {"BLOCK_N": numel, "num_warps": 4}, call) is None
    said = limit_problem("rms_norm", {"BLOCK_N": 2 * numel, "num_warps": 4}, call)
    assert said is not None and "largest tensor" in said
    assert limit_problem("silu_mul", {"BLOCK_M": 2, "BLOCK_N": numel // 2}, ("silu_mul", "fp32", (2, 64))) is None


def test_a_count_of_2_to_the_31_is_beyond_triton_s_integers():
    """Planted pl06: limit_problem's 32-bit limit one lenient: num_stages 2**31 (one past a C int) passed
    preflight, where Triton's compiler options hold it as an int32."""
    from neurobrix.plan import INT32, limit_problem

    call = ("rms_norm", "fp32", (1, 4096))
    said = limit_problem("rms_norm", {"BLOCK_N": 4096, "num_stages": INT32 + 1}, call)
    assert said is not None and "32-bit" in said
    assert limit_problem("rms_norm", {"BLOCK_N": 4096, "num_stages": INT32}, call) is None


# ------------------------------------------------------------------------------------------ schema.py: class.yaml
def _class(backend="cuda", cc=(9, 0), launch=("pdl",), name="amd-mi300"):
    data = {"format": 1, "class": name, "description": "a class", "launch": list(launch)}
    data["match"] = {
        "backend": backend,
        "vendor": "amd" if backend == "hip" else "nvidia",
        "device_name": "AMD Instinct MI300X*",
        "compute_capability": list(cc),
        "multiprocessor_count": 304,
    }
    return data


def test_dependent_launch_on_a_gpu_of_another_vendor_is_refused():
    """Planted sc17: parse_class letting a class list launch [pdl] on any backend of compute capability 9 or later:
    an AMD class (backend hip, gfx942's 9.4) took CUDA's programmatic dependent launch, which its GPUs do not
    have (the launch died on the machine, after the weights were loaded)."""
    from neurobrix.errors import TablesError
    from neurobrix.schema import parse_class

    with pytest.raises(TablesError, match="field 'launch'.*CUDA GPUs"):
        parse_class(_class("hip", (9, 4)), "amd-mi300/class.yaml", "amd-mi300")
    assert parse_class(_class("hip", (9, 4), ()), "amd-mi300/class.yaml", "amd-mi300").launch == ()
    assert parse_class(_class("cuda", (9, 0)), "amd-mi300/class.yaml", "amd-mi300").launch == ("pdl",)


def test_a_call_keyed_by_a_boolean_is_no_kernel_call():
    """Planted pl09: _is_call taking any int subclass as a key value: resolve looked up ``(True, 4096)`` as the call
    of M=1 (True == 1 to Python) and planned it, where a recorded forward pass gives integers and a key of booleans
    is a program's mistake (its docstring: "one integer per dimension of the op's key")."""
    from neurobrix import tables
    from neurobrix.errors import UsageError
    from neurobrix.plan import resolve

    with pytest.raises(UsageError, match="not a kernel call"):
        resolve([("rms_norm", "fp32", (True, 4096))], tables.load(), "interpreter")


def test_a_single_bf16_call_on_the_interpreter_class_is_refused_before_launch():
    """Planted pl11: certified_settings refusing bf16 on the interpreter class only for two bf16 calls or more: a
    hand-built plan of one bf16 call went on to resolve (which refused it as a missing entry at best, or launched the
    interpreter's bf16, computed on bit patterns, where a table held one)."""
    from neurobrix import tables
    from neurobrix.errors import UsageError
    from neurobrix.plan import certified_settings

    call = ("rms_norm", "bf16", (1, 4096))
    with pytest.raises(UsageError, match="launches bf16 calls on the interpreter class"):
        certified_settings({call: {"BLOCK_N": 4096, "num_warps": 4}}, False, tables.load(), "interpreter", "a plan")


# ------------------------------------------------------------------------------------------ schema.py: TRACKED.yaml
def _tracked(path):
    digest = "0" * 64
    return {
        "format": 1,
        "files": [{"path": path, "wheel_path": f"neurobrix/_tables/{path}", "sha256": digest, "size": 1}],
    }


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("interpreter/demo\x7f.json", "a control character"),  # DEL: a terminal's rub-out, not a name's character
        ("interpreter/" + "é" * 126 + ".json", "a name longer than 255 bytes"),  # 131 characters, 257 bytes
    ],
)
def test_a_tracked_path_with_del_or_a_name_too_long_in_bytes_is_refused(path, said):
    """Planted sc21: _path_form_problem's control characters without DEL (127); sc22: a name's length counted in
    characters, not the bytes a file system keeps (255): a name of 257 bytes in 131 characters passed, and every command
    reading the tables died in "File name too long" (exit 1). Each now refused naming the entry."""
    from neurobrix.errors import TablesError
    from neurobrix.schema import parse_tracked

    with pytest.raises(TablesError, match=f"not a plain relative path: {said}"):
        parse_tracked(_tracked(path), "TRACKED.yaml")
    assert parse_tracked(_tracked("interpreter/" + "é" * 125 + ".json"), "TRACKED.yaml")  # 255 bytes: kept


def test_a_path_tracked_twice_is_refused():
    """Planted sc23: parse_tracked without its check of a path listed twice: TRACKED.yaml naming a file twice (with
    two digests, one of them the file's) passed, the folder check hashing the file once per entry."""
    from neurobrix.errors import TablesError
    from neurobrix.schema import parse_tracked

    data = _tracked("interpreter/demo.json")
    data["files"].append({**data["files"][0], "sha256": "1" * 64})
    with pytest.raises(TablesError, match=r"files\[1\]\.path.*listed twice"):
        parse_tracked(data, "TRACKED.yaml")


def test_zero_pipeline_stages_is_no_setting():
    """Planted pl16: VALUES' num_stages taking 0: a table holding ``num_stages: 0`` (a pipeline of no stages, which
    no candidate of certify has) passed preflight; its docstring's rule is an integer >= 1."""
    from neurobrix.plan import value_problem

    assert value_problem({"num_stages": 1}) is None
    said = value_problem({"num_stages": 0})
    assert said is not None and "num_stages=0" in said


def test_a_plan_launches_with_pdl_only_where_its_class_lists_it():
    """Planted pl18: resolve's plan taking pdl from whether the class's GPU has programmatic dependent launch, not
    from whether its class.yaml lists it among the launch features that pay: a Hopper class measured without it
    (CONTRIBUTING: a class lists it once it pays) launched every kernel with it."""
    import dataclasses

    from neurobrix import tables
    from neurobrix.plan import resolve

    loaded = tables.load()
    first = loaded.index("nvidia-h200", "rms_norm").entries[0].domain
    call = ("rms_norm", first.dtypes[0], tuple(lo for _, lo, _ in first.ranges))
    assert resolve([call], loaded, "nvidia-h200").pdl is ("pdl" in loaded.classes["nvidia-h200"].launch) is True
    unlisted = dataclasses.replace(loaded.classes["nvidia-h200"], launch=())
    plain = dataclasses.replace(loaded, classes={**loaded.classes, "nvidia-h200": unlisted})
    assert resolve([call], plain, "nvidia-h200").pdl is False


# ------------------------------------------------------------------------------------------ schema.py: proofs
def _demo_proofs():
    import yaml
    from conftest import DATA

    return yaml.safe_load((DATA / "tables" / "interpreter" / "demo.proofs.yaml").read_text(encoding="utf-8"))


def test_a_proof_s_domain_ending_before_it_starts_is_refused():
    """Planted sc24: _domain taking hi = lo - 1: certify reading an earlier record (parse_proofs without an index)
    took ``M: [17, 16]``, an empty domain, where its rule is lo <= hi."""
    from neurobrix.errors import TablesError
    from neurobrix.schema import parse_proofs

    data = _demo_proofs()
    assert len(parse_proofs(data, "demo.proofs.yaml", "interpreter", "demo").entries) == 4
    data["entries"][1]["domain"]["M"] = [17, 16]
    with pytest.raises(TablesError, match=r"entries\[1\]\.domain\.M.*lo <= hi"):
        parse_proofs(data, "demo.proofs.yaml", "interpreter", "demo")


def test_length_segments_are_the_longest_runs_of_lengths_looked_up_alike():
    """Planted pl19: length_segments cutting at an entry's last length rather than after it: the interpreter's
    linear entry of M 1..4 split the bucket 3..4 in two (warmup then listed a bucket no lookup tells apart). Caught
    only by tests/test_generation_planted.py, a file of minutes; this holds it in a second. The truth: the longest
    runs of lengths whose bucket under every length rule and whose entries are the same, found length by length."""
    from neurobrix import tables
    from neurobrix.buckets import bucket_of
    from neurobrix.ops import SPECS
    from neurobrix.plan import length_segments

    loaded = tables.load()
    dims = [
        (
            rule,
            [
                (first, last)
                for e in loaded.index("interpreter", spec.name).entries
                for n, first, last in e.domain.ranges
                if n == dim
            ],
        )
        for spec in SPECS.values()
        for dim, rule in zip(spec.key, spec.buckets)
        if rule != "exact"
    ]

    def alike(value):
        return [
            (bucket_of(rule, value), [a <= value and (b is None or value <= b) for a, b in ranges])
            for rule, ranges in dims
        ]

    lo, hi = 1, 300
    runs = []
    for value in range(lo, hi + 1):
        if runs and alike(value) == alike(runs[-1][1]):
            runs[-1][1] = value
        else:
            runs.append([value, value])
    assert length_segments(loaded, "interpreter", lo, hi) == [tuple(run) for run in runs]


def test_overlapping_proof_domains_are_refused_in_any_file_order():
    """Planted sc26: _disjoint sweeping the entries in file order, not by their first dimension's start: a record
    holding M 10..20, then 30..40, then 15..16 dropped the first from the sweep at the second and never compared it
    with the third, which it overlaps (certify reading an earlier record took both)."""
    import copy

    from neurobrix.errors import TablesError
    from neurobrix.schema import Domain, entry_digest, parse_proofs

    data = _demo_proofs()
    entries = []
    for m in ([10, 20], [30, 40], [15, 16]):
        entry = copy.deepcopy(data["entries"][1])
        entry["domain"]["M"] = m
        entries.append(entry)
    data["entries"] = entries
    with pytest.raises(TablesError, match=r"entries\[0\].*and entries\[2\].*overlap"):
        parse_proofs(data, "demo.proofs.yaml", "interpreter", "demo")
    entries[2]["domain"]["M"] = [21, 29]
    for entry in entries:  # each copied proof given its new entry's digest (strict round 28 refuses a copied proof)
        domain = Domain(tuple(entry["domain"]["dtypes"]), tuple((d, *entry["domain"][d]) for d in ("M", "N")))
        entry["proof"]["entry"] = entry_digest("demo", "interpreter", domain, entry["config"])
    assert len(parse_proofs(data, "demo.proofs.yaml", "interpreter", "demo").entries) == 3


# ------------------------------------------------------------------------------------------ tables.py
def test_neurobrix_tables_naming_a_file_is_refused_by_name(tmp_path, monkeypatch):
    """Planted tb03: _locate taking any existing path for NEUROBRIX_TABLES: a file there (a TRACKED.yaml named
    instead of its folder) was taken for a tables folder, and reading it died in NotADirectoryError (exit 1) where
    the variable's rule is a folder, refused naming it."""
    from neurobrix import tables
    from neurobrix.errors import TablesError

    named = tmp_path / "TRACKED.yaml"
    named.write_text("format: 1\nfiles: []\n", encoding="utf-8")
    monkeypatch.setenv(tables.ENV_VAR, str(named))
    with pytest.raises(TablesError, match=f"{tables.ENV_VAR}=.*is not a folder"):
        tables.load()


def test_an_index_of_every_older_format_is_told_to_be_reformatted():
    """Planted sc28: parse_index naming only formats 3 and later older layouts: an index of format 2 (the first
    that `conformance reformat` rewrites) got the schema's bare "format must be 4" without the command that fixes
    it."""
    import json

    from conftest import DATA

    from neurobrix.errors import TablesError
    from neurobrix.schema import INDEX_FORMAT, parse_index

    data = json.loads((DATA / "tables" / "interpreter" / "demo.json").read_text(encoding="utf-8"))
    for old in range(2, INDEX_FORMAT):
        with pytest.raises(TablesError, match=f"format {old} is an older layout.*conformance reformat"):
            parse_index({**data, "format": old}, "demo.json", "interpreter", "demo")


def test_an_alias_used_as_a_key_is_refused(tmp_path):
    """Planted tb05: _aliased walking a mapping's values but not its keys: ``*name`` as a key (the anchored value
    given again as another mapping's key) passed, where a table writes every value out."""
    from neurobrix import tables
    from neurobrix.errors import TablesError

    path = tmp_path / "x.yaml"
    path.write_text("a: &k x\nb:\n  *k : 1\n", encoding="utf-8")
    with pytest.raises(TablesError, match="given again elsewhere through an alias"):
        tables.read_yaml(path, "x.yaml")
    path.write_text("a: x\nb:\n  x: 1\n", encoding="utf-8")
    assert tables.read_yaml(path, "x.yaml") == {"a": "x", "b": {"x": 1}}


def test_two_classes_one_gpu_matches_are_refused_next_to_each_other():
    """Planted tb06: _disjoint_classes comparing each class with those two or more places after it (in id order):
    two classes one H100 matches (``NVIDIA H100*`` and ``NVIDIA H100 80GB*``), next to each other, loaded."""
    from neurobrix.errors import TablesError
    from neurobrix.tables import _disjoint_classes

    wide = GPUClass("h100", "H100s", HOPPER, None, "h100/class.yaml")
    narrow = GPUClass(
        "h100-80",
        "80 GB H100s",
        ClassMatch("cuda", "nvidia", "NVIDIA H100 80GB*", (9, 0), 132),
        None,
        "h100-80/class.yaml",
    )
    with pytest.raises(TablesError, match="can match both"):
        _disjoint_classes({"h100": wide, "h100-80": narrow})
    other = GPUClass("h200", "H200s", ClassMatch("cuda", "nvidia", "NVIDIA H200*", (9, 0), 132), None, "h200/c.yaml")
    _disjoint_classes({"h100": wide, "h200": other})


# ------------------------------------------------------------------------------------------ memory.py
def test_weights_are_counted_in_the_run_s_dtype():
    """Planted mm01: weight_bytes counting two bytes a parameter whatever the dtype: an fp32 run (the CPU's default)
    of Llama-3.1-8B was planned at 16 GB of weights where it holds 32 GB, and started into an out-of-memory error
    the check exists to refuse (tests/test_memory.py checks bf16 only)."""
    from conformance.catalogue import load
    from neurobrix import memory

    llama = load()[0]["meta-llama/Llama-3.1-8B-Instruct"]
    assert 32.1e9 < memory.weight_bytes(llama, 4) < 32.2e9  # 8.03 billion parameters of 4 bytes
    assert memory.weight_bytes(llama, 4) == 2 * memory.weight_bytes(llama, 2)


# ------------------------------------------------------------------------------------------ run.py
@pytest.mark.parametrize(("field", "value"), [("stream", "no"), ("stream", 0), ("backend", None), ("dtype", 32)])
def test_run_options_stream_backend_and_dtype_of_another_type_are_refused(field, value):
    """Planted rn01: check_options without its check of stream: ``RunOptions(stream="no")`` (a true string) streamed
    the text, ``stream=0`` did not, where every other field of another type than the CLI gives is refused naming it
    (tests/test_strict_round14.py holds the others)."""
    from neurobrix.errors import UsageError
    from neurobrix.run import RunOptions, check_options

    with pytest.raises(UsageError, match=rf"RunOptions.{field} must be"):
        check_options(RunOptions(**{"model": "tiny", "prompt": "hello", "backend": "torch", field: value}))
    check_options(RunOptions(model="tiny", prompt="hello", backend="torch", stream=False, dtype="fp32"))


def test_a_proof_whose_best_time_is_above_its_median_is_refused():
    """Planted sc36: _proof_numbers letting a best time up to 1.5x the median through: a proof of best 2.0 us and
    median 1.5 us passed, where the best of the timings is never above their median."""
    from neurobrix.errors import TablesError
    from neurobrix.schema import parse_proofs

    data = _demo_proofs()
    data["entries"][1]["proof"].update(time_best_us=1.5, time_median_us=1.5)
    assert len(parse_proofs(data, "demo.proofs.yaml", "interpreter", "demo").entries) == 4
    data["entries"][1]["proof"]["time_best_us"] = 2.0
    with pytest.raises(TablesError, match=r"entries\[1\]\.proof\.time_best_us.*never above their median"):
        parse_proofs(data, "demo.proofs.yaml", "interpreter", "demo")


def test_working_memory_holds_a_row_of_logits_per_sequence():
    """Planted mm03: activation_bytes counting one row of float32 logits whatever the batch: a batch of 4 decoding
    over a vocabulary of 128,256 holds 4 rows (2 MB), where the check counted 0.5 MB. Each sequence's one-token
    step holds the same, so a batch of 4 holds 4 times a batch of 1's."""
    from conformance.catalogue import load
    from neurobrix import memory

    llama = load()[0]["meta-llama/Llama-3.1-8B-Instruct"]
    one = memory.activation_bytes(llama, 2, 1, 1)
    assert memory.activation_bytes(llama, 2, 4, 1) == 4 * one
    assert one > llama.vocab_size * 4


def test_a_model_s_token_limit_filling_the_context_exactly_is_taken():
    """Planted rn03: new_token_limit refusing generation_config.json's max_new_tokens when it fills what the context
    leaves after the prompt exactly: transformers' generate stops there too (no token past the context), so nothing
    needs refusing; one token more is refused. rn04: the note saying where the limit came from printed for the
    default instead of for the model's own limit; the default within the context needs none. rn05: the context's check
    counting the new tokens asked for (0 from the Python API) where the prefill picks one token whatever is asked."""
    import dataclasses

    from conformance.catalogue import load
    from neurobrix.errors import UsageError
    from neurobrix.run import new_token_limit

    cfg = dataclasses.replace(load()[0]["meta-llama/Llama-3.1-8B-Instruct"], max_positions=64, sliding_window=None)

    class Model:
        def __init__(self, extra):
            self.extra = extra

        def max_new_tokens(self, prompt_len):
            n = 64 - prompt_len + self.extra
            return n, f"generation_config.json's max_new_tokens of {n}"

    notes = []
    assert new_token_limit(cfg, Model(0), 10, None, notes.append) == 54
    assert len(notes) == 1 and "at most 54 tokens: generation_config.json's max_new_tokens" in notes[0]
    with pytest.raises(UsageError, match="reaches past the model's context of 64 tokens"):
        new_token_limit(cfg, Model(1), 10, None, notes.append)
    quiet = dataclasses.replace(cfg, max_positions=100_000)
    none = type(
        "NoLimit", (), {"max_new_tokens": lambda self, prompt_len: None, "generation_file": "generation_config.json"}
    )()
    notes.clear()  # the default (transformers' 20 new tokens) within the context: its own note, not the model's
    assert new_token_limit(quiet, none, 10, None, notes.append) == 20
    assert len(notes) == 1 and "transformers' generate makes 20 new tokens" in notes[0], notes
    # rn05: a prompt filling the context leaves no room for the token its prefill picks, whatever was asked
    with pytest.raises(UsageError, match=r"the prompt \(64 tokens\) plus one new token exceeds"):
        new_token_limit(cfg, none, 64, 0, notes.append)


def test_a_proof_may_reject_a_candidate_equal_to_its_setting_only_to_python():
    """Planted sc39: _proof_candidates comparing a rejected candidate with the entry's setting as Python does: a
    proof rejecting ``BLOCK_N=64.0`` (another constexpr to Triton, another candidate) beside its setting of BLOCK_N
    64 was refused as rejecting its own setting; the setting itself rejected is still refused."""
    from neurobrix.errors import TablesError
    from neurobrix.schema import parse_proofs

    data = _demo_proofs()
    proof = data["entries"][0]["proof"]
    proof["rejected"] = ["slower: BLOCK_N=64.0 num_warps=4: 2.0 us vs 1.5 us"]
    assert parse_proofs(data, "demo.proofs.yaml", "interpreter", "demo").entries[0].proof.rejected[0].config == {
        "BLOCK_N": 64.0,
        "num_warps": 4,
    }
    proof["rejected"] = ["slower: BLOCK_N=64 num_warps=4: 2.0 us vs 1.5 us"]
    with pytest.raises(TablesError, match="rejects the entry's own setting"):
        parse_proofs(data, "demo.proofs.yaml", "interpreter", "demo")


def test_a_provenance_of_no_cuda_written_as_text_records_no_cuda():
    """Planted sc45: stack_of taking the text "None" for a CUDA version: a provenance written on a CPU (torch's
    version.cuda None, recorded as "None") gave the index a stack with cuda "None", which no machine's stack has, so
    every run refused the table as certified on another stack."""
    from neurobrix.schema import stack_of

    for cuda in (None, "None"):
        assert stack_of({"torch": "2.13.0", "triton": "3.9.0", "cuda": cuda}) == {"torch": "2.13.0", "triton": "3.9.0"}
    assert stack_of({"torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0"})["cuda"] == "13.0"


# ------------------------------------------------------------------------------------------ buckets.py
def test_a_first_bucket_of_no_power_of_two_is_no_rule():
    """Planted bk01: valid_rule taking every ``pow2>=F`` the pattern spells: an index keyed ``pow2>=12`` was read,
    and its buckets [1, 12], [13, 16], [17, 32] ... (pow2_bucket assumes F a power of two) were not the ones certify
    wrote; the rule's docstring: F a power of two."""
    import json

    from conftest import DATA

    from neurobrix.buckets import valid_rule
    from neurobrix.errors import TablesError
    from neurobrix.schema import parse_index

    assert [valid_rule(f"pow2>={f}") for f in (1, 2, 12, 16, 24, 256)] == [True, True, False, True, False, True]
    data = json.loads((DATA / "tables" / "interpreter" / "demo.json").read_text(encoding="utf-8"))
    with pytest.raises(TablesError, match=r"unknown bucket rule\(s\) 'pow2>=12'"):
        parse_index({**data, "key": [["M", "pow2>=12"], ["N", "exact"]]}, "demo.json", "interpreter", "demo")
