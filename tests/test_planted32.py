"""Planted-bug round 32: tests for the plants of tests/planted32_plants.py that the existing tests let through, in the
code merged after commit 2088559 (gate round 36, text round 31, walk-through 32, strict round 37, kernel mutants 7).
Each test fails under the plant(s) its docstring names (checked: ``python tests/planted32_driver.py COPY OUT --with
tests/test_planted32.py ID``, each plant against this file alone) and passes on the clean code.

Outcomes (64 plants): 42 caught by the tests before the round (every gate plant, the panic check, the Strip step's
"stop" read as cutting at 0 or from 2, the Sequence walk, a Replace of two characters left streaming, the joined step
counted at its own step, the stream and its note not held, a decode's panic swallowed; the where filter, the
origin/main message and rev-parse test, startup's pre-check; the cgroup's "max" level, v1 before v2, the v1 stat's
names, the page cache, the tightest level, the rotary tables' width and their place in the plan, the cgroup not read;
warmup's largest cache, its frees and its flags' names; the 2**63 bound, run's argument order, the tables' exit,
ENOTDIR, Triton's cache message and its OSError, the hub id's four edges; both kmut7 record plants); 22 survived and
are caught here: t05 t06 t08 t12, w02 w05 w06 w09 w10 w11, s01 s02 s07 s09 s10 s11 s12 s17 s23 s27 s28 s29. Round
31's driver printed round 26's usage for --help (run_round's default ``doc``): fixed, and held by the usage test.
Dropped as equivalent (docs/planted-bugs.md says why): g05, t14, t15, s15 and w07."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO
from store_fixtures import config_dict, make_checkpoint

from neurobrix import memory
from neurobrix.cli import main
from neurobrix.config import ModelConfig

GIB = 2**30
SLIM = {  # one head of 2, one layer: the KV cache is what a capacity makes of it (strict round 37's model)
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 8,
    "intermediate_size": 2,
    "num_hidden_layers": 1,
    "num_attention_heads": 1,
    "num_key_value_heads": 1,
    "head_dim": 2,
    "vocab_size": 32,
    "max_position_embeddings": 2**64,
    "rms_norm_eps": 1e-5,
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="ascii")


def _main(capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(list(args))
    return exit_.value.code, capsys.readouterr().err


# --- strict round 37: the cgroup's limit -----------------------------------------------------------------------------


def test_a_limit_at_the_namespaces_root_binds(tmp_path):
    """s01 (the levels walked down to 1, never the root), s02 (a cgroup outside the namespace's view read as no
    limit). A container's own cgroup namespace shows its process at "0::/" (or "0::/../x" for a process outside the
    view), and its limit is the namespace root's memory.max: the one docker and Kubernetes set."""
    _write(
        tmp_path,
        {
            "proc/self/cgroup": "0::/\n",
            "cg/memory.max": f"{2 * GIB}\n",
            "cg/memory.current": f"{GIB // 2}\n",
        },
    )
    proc, root = str(tmp_path / "proc"), str(tmp_path / "cg")
    assert memory.cgroup_memory(proc, root) == (3 * GIB // 2, 2 * GIB, str(tmp_path / "cg" / "memory.max"))
    (tmp_path / "proc/self/cgroup").write_text("0::/../sibling\n", encoding="ascii")
    assert memory.cgroup_memory(proc, root) == (3 * GIB // 2, 2 * GIB, str(tmp_path / "cg" / "memory.max"))


def test_what_a_limit_leaves_is_never_negative_nor_past_the_limit(tmp_path):
    """s07. A cgroup over its limit for a moment (memory.current above memory.max, the kernel reclaiming) leaves 0,
    not a negative figure; page cache counted beyond what is used (the stat and the counter read at two moments)
    leaves the limit, not more."""
    files = {"proc/self/cgroup": "0::/\n", "cg/memory.max": f"{GIB}\n", "cg/memory.current": f"{GIB + 4096}\n"}
    _write(tmp_path, files)
    proc, root = str(tmp_path / "proc"), str(tmp_path / "cg")
    assert memory.cgroup_memory(proc, root)[:2] == (0, GIB)
    _write(tmp_path, {"cg/memory.current": f"{GIB // 4}\n", "cg/memory.stat": f"inactive_file {GIB // 2}\n"})
    assert memory.cgroup_memory(proc, root)[:2] == (GIB, GIB)


def _fit_on_cpu(monkeypatch, host: int, cgroup: tuple[int, int, str] | None, capacity: int) -> str:
    monkeypatch.setattr(memory, "host_memory", lambda: (host, 4 * host))
    monkeypatch.setattr(memory, "cgroup_memory", lambda: cgroup)
    cfg = ModelConfig.from_hf(SLIM)
    with pytest.raises(memory.DeviceMemoryError) as refused:
        memory.require_fit_on(SimpleNamespace(type="cpu"), cfg, 4, 1, 1, capacity)
    return str(refused.value)


def test_the_cgroup_binds_by_what_it_leaves_not_by_its_limit(monkeypatch):
    """s09 (the limit, not what it leaves, compared with the host's figure). A limit of 64 GiB, 63.5 GiB of it used,
    on a host with 8 GiB available: 0.5 GiB is what the process may still take, and the message names the limit."""
    cgroup = (GIB // 2, 64 * GIB, "/sys/fs/cgroup/job/memory.max")
    message = _fit_on_cpu(monkeypatch, 8 * GIB, cgroup, capacity=2**27)  # a 2 GiB cache
    assert "but 0.50 GiB of the 64.00 GiB memory limit of this process's cgroup" in message, message


def test_the_limit_named_is_the_limit_not_what_it_leaves(monkeypatch):
    """s12 (the limit's figure given as what is left). 1 GiB left of a 4 GiB limit: "1.00 GiB of the 4.00 GiB memory
    limit"."""
    message = _fit_on_cpu(monkeypatch, 8 * GIB, (GIB, 4 * GIB, "/cg/memory.max"), capacity=2**27)
    assert "but 1.00 GiB of the 4.00 GiB memory limit of this process's cgroup (/cg/memory.max)" in message, message


def test_weights_past_the_containers_limit_ask_for_a_larger_limit(monkeypatch):
    """s11 (a larger host asked for where the cgroup's limit binds). A limit that leaves too little for the weights
    alone is raised by the container's settings; the host is large enough."""
    cfg = ModelConfig.from_hf({**SLIM, "hidden_size": 4096, "intermediate_size": 4096, "vocab_size": 32000})
    monkeypatch.setattr(memory, "host_memory", lambda: (64 * GIB, 128 * GIB))
    monkeypatch.setattr(memory, "cgroup_memory", lambda: (2**20, 2**21, "/cg/memory.max"))
    with pytest.raises(memory.DeviceMemoryError) as refused:
        memory.require_fit_on(SimpleNamespace(type="cpu"), cfg, 4, 1, 1, 8)
    assert "a smaller dtype or a larger memory limit is needed" in str(refused.value), refused.value


def test_a_gpu_warmup_that_cannot_fit_names_the_warmup(monkeypatch):
    """s10 (the GPU branch dropping what and lengths). On a GPU the warmup's refusal named "this generation" and "prompt
    plus --max-tokens", flags warmup does not take."""
    import torch

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (9 * GIB // 2, 80 * GIB))
    with pytest.raises(memory.DeviceMemoryError) as refused:
        memory.require_fit_on(
            SimpleNamespace(type="cuda"), ModelConfig.from_hf(SLIM), 2, 1, 4, 2**27, "this warmup", "--max-prompt etc."
        )
    message = str(refused.value)
    assert message.startswith("this warmup needs about") and "(--max-prompt etc.)" in message, message


# --- strict round 37: the 2**63-byte cache ---------------------------------------------------------------------------


def test_positions_past_what_torch_can_describe_are_refused_where_the_cache_is_smaller(tmp_path, monkeypatch, capsys):
    """s23 (the positions' int64 table left out of the 2**63 check). In fp16 the cache of one head of 2 is 4 bytes a
    position, the positions' table 8: at 2**60 positions the cache is 2**62 bytes and the table 2**63, which torch
    cannot describe either ("Storage size calculation overflowed", a traceback)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    assert main(["import", str(make_checkpoint(tmp_path / "huge", config=config_dict(**SLIM)))]) == 0
    code, err = _main(
        capsys, "warmup", "--model", "huge", "--dtype", "fp16", "--max-prompt", "2", "--max-tokens", str(2**62)
    )
    assert code == 5 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("neurobrix: error: a KV cache of 1152921504606846976 positions")


# --- strict round 37: names the OS cannot look up --------------------------------------------------------------------


def test_the_default_home_the_os_cannot_look_up_is_named_as_the_default(tmp_path, monkeypatch, capsys):
    """s29 (the variable named though unset: "NEUROBRIX_HOME=None"). With NEUROBRIX_HOME unset and a HOME whose
    default store lies past a name of 300 bytes, the refusal names the default home."""
    monkeypatch.delenv("NEUROBRIX_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / ("h" * 300)))
    code, err = _main(capsys, "run", "--model", "m", "--prompt", "hello")
    assert code == 2 and "NEUROBRIX_HOME=" not in err, err
    assert "the default home" in err and "cannot be used as the model store (File name too long)" in err, err


# --- walk-through 32 --------------------------------------------------------------------------------------------------


def _git(repo, *args: str) -> str:
    env = ["-c", "user.email=w@x", "-c", "user.name=w"]
    return subprocess.run(["git", "-C", str(repo), *env, *args], capture_output=True, text=True, check=True).stdout


def test_affected_names_origin_only_where_the_local_name_is_missing(tmp_path):
    """w02 (origin/main named whenever it exists). A checkout with its own `main` and `origin/main` whose branch
    shares no history with main (an orphan branch): `git diff main...HEAD` fails for want of a merge base, and the
    refusal must not say there is no `main` in the checkout."""
    from conformance import affected
    from neurobrix.errors import UsageError

    source = tmp_path / "source"
    source.mkdir()
    _git(tmp_path, "init", "-q", "-b", "main", str(source))
    (source / "README.md").write_text("a\n")
    _git(source, "add", ".")
    _git(source, "commit", "-q", "-m", "base")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(source), str(clone))
    _git(clone, "checkout", "-q", "--orphan", "other")
    _git(clone, "commit", "-q", "-m", "unrelated")
    with pytest.raises(UsageError) as refused:
        affected.changed_files("main", clone)
    assert "no branch, tag or commit" not in str(refused.value), refused.value


def test_import_warmup_on_a_gpu_of_no_certified_class_says_so(monkeypatch, capsys):
    """w05 (the uncertified GPU's message saying there is none), w06 (a GPU counted as none unless there are two).
    One GPU of no certified class, the interpreter off."""
    import argparse

    import torch

    from neurobrix import cli_store

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(cli_store, "_certified_gpu_class", lambda: None)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert cli_store._after_import(argparse.Namespace(warmup=True), SimpleNamespace(name="tiny")) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("--warmup: this GPU is of no certified class") and "no GPU here" not in first, first


def _driver(round_: int, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, str(REPO / "tests" / f"planted{round_}_driver.py"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd)


@pytest.mark.parametrize("round_", [31, 32])
def test_a_planted_driver_prints_its_own_usage(round_, tmp_path):
    """Round 31's driver printed round 26's usage for -h and --help (run_round's default ``doc``), naming
    tests/planted26_driver.py. w10: -h as --help."""
    for flag in ("-h", "--help"):
        shown = _driver(round_, flag, cwd=tmp_path)
        assert shown.returncode == 0 and f"python tests/planted{round_}_driver.py COPY RESULTS.jsonl" in shown.stdout
        assert "planted26_driver.py COPY" not in shown.stdout, shown.stdout


def test_a_planted_driver_takes_with_and_its_tests_and_refuses_an_option_for_a_folder(tmp_path):
    """w09 (--with's TESTS not counted among the names: `COPY RESULTS --with TESTS ID`, the way CONTRIBUTING gives to
    run one plant against one file, refused as an argument short), w11 (an option taken for COPY: `-x RESULTS` made a
    copy named "-x"). `COPY RESULTS --with` and `-x RESULTS` are the usage, exit 2, and no copy made."""
    sys.path.insert(0, str(REPO / "tests"))
    try:
        import planted24_driver
    finally:
        sys.path.remove(str(REPO / "tests"))
    assert planted24_driver.usage(["copy", "out.jsonl", "--with", "tests/test_x.py", "p01"]) is None
    assert planted24_driver.usage(["copy", "out.jsonl", "p01", "p02"]) is None
    for args in (["copy", "out.jsonl", "--with"], ["-x", "out.jsonl"]):
        short = _driver(32, *args, cwd=tmp_path)
        assert short.returncode == 2 and "Traceback" not in short.stderr, (args, short.stderr)
        assert short.stderr.startswith("error: expected COPY RESULTS.jsonl"), short.stderr
        assert not (tmp_path / args[0]).exists(), args


# --- text round 31: held streams -------------------------------------------------------------------------------------


def _tokenizer(tmp_path: Path, kind: str, decoder: dict | None):
    """(the engine's Tokenizer, the tokenizers library's) for the fixture tokenizer ``kind``, its decoder replaced by
    ``decoder`` (None: its own)."""
    from tokenizer_fixtures import save
    from tokenizers import Tokenizer as Library

    from neurobrix.tokenizer import Tokenizer

    folder = tmp_path / f"{kind}-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    save(folder, kind)
    if decoder is not None:
        data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
        data["decoder"] = decoder
        (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    return Tokenizer(folder), Library.from_file(str(folder / "tokenizer.json"))


def _streamed(tok, ids: list[int]) -> tuple[str, str]:
    """(the text the stream wrote before its end, all it wrote)."""
    stream = tok.stream()
    early = "".join(stream.push(i) for i in ids)
    return early, early + stream.finish()


REPLACE_HE = {"type": "Replace", "pattern": {"String": "he"}, "content": "HE"}
SPACES = {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}


def test_a_nested_decoder_sequence_that_rewrites_joined_text_is_held(tmp_path):
    """t05 (nested Sequences not flattened: the Fuse inside the inner one unseen). A decoder [[Replace, ByteFallback,
    Fuse], Replace "he", Strip] is the fixture's with its first steps nested: the stream writes "th" before "e" makes
    "tHE" of it, unless it is held."""
    decoder = {
        "type": "Sequence",
        "decoders": [
            {"type": "Sequence", "decoders": [SPACES, {"type": "ByteFallback"}, {"type": "Fuse"}]},
            REPLACE_HE,
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ],
    }
    tok, library = _tokenizer(tmp_path, "sentencepiece", decoder)
    ids = [library.token_to_id(t) for t in ("\u2581", "t", "h", "e", "\u2581th", "e")]
    assert tok.stream_held is not None
    assert _streamed(tok, ids) == ("", tok.decode(ids)) and tok.decode(ids).strip() == "tHE tHE"


def test_a_bytelevel_decoder_followed_by_a_replace_is_held(tmp_path):
    """t06 (ByteLevel not taken for a step that joins the tokens). ByteLevel then Replace "he": "t" and "h" alone
    are no prefix of "tHE"."""
    decoder = {
        "type": "Sequence",
        "decoders": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            REPLACE_HE,
        ],
    }
    tok, library = _tokenizer(tmp_path, "bytelevel", decoder)
    ids = library.encode("the theme", add_special_tokens=False).ids
    assert tok.stream_held is not None and _streamed(tok, ids)[1] == library.decode(ids)
    rng = random.Random(32)
    for _ in range(100):
        ids = [rng.randrange(library.get_vocab_size()) for _ in range(rng.randint(1, 8))]
        assert _streamed(tok, ids)[1] == tok.decode(ids), ids


def test_a_byte_fallback_step_after_the_join_is_held(tmp_path):
    """t08 (ByteFallback after Fuse not held). After Fuse, ByteFallback reads "<0x41>" alone as "A" but leaves
    "t<0x41>" as it is: a window holding the byte token alone is no part of the whole decode."""
    decoder = {"type": "Sequence", "decoders": [SPACES, {"type": "Fuse"}, {"type": "ByteFallback"}]}
    tok, library = _tokenizer(tmp_path, "sentencepiece", decoder)
    assert tok.stream_held is not None
    byte = library.token_to_id("<0x41>")
    rng = random.Random(8)
    cases = [[library.token_to_id("t"), byte], [byte, library.token_to_id("t"), byte]]
    cases += [[rng.choice([byte, rng.randrange(library.get_vocab_size())]) for _ in range(6)] for _ in range(100)]
    for ids in cases:
        assert _streamed(tok, ids)[1] == tok.decode(ids), ids


def test_a_prompt_the_library_panics_on_is_named_as_the_prompt(tmp_path):
    """t12 (the refusal saying the text could not be decoded). The panic is the encoding's: the prompt is named."""
    from test_text_round31 import _strip_then_prepend

    from neurobrix.tokenizer import Tokenizer, TokenizerError

    _tokenizer(tmp_path, "sentencepiece", None)
    file = tmp_path / "sentencepiece-0" / "tokenizer.json"
    file.write_text(json.dumps(_strip_then_prepend(json.loads(file.read_text(encoding="utf-8")))), encoding="utf-8")
    with pytest.raises(TokenizerError) as refused:
        Tokenizer(file.parent).encode_text("hello")
    assert str(refused.value).startswith("the tokenizer cannot encode the prompt: the tokenizers library failed")


def test_the_warmups_memory_check_counts_its_longest_prompt_and_largest_cache(tmp_path, monkeypatch, capsys):
    """s17 (the shortest prompt counted), s18 (the smallest cache). The check is run's on the warmup's largest pass:
    its longest prompt's working memory and its largest KV cache (here `--max-prompt 300 --max-tokens 40`)."""
    import neurobrix.warmup as warmup_module

    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    assert main(["import", str(make_checkpoint(tmp_path / "slim", config=config_dict(**SLIM)))]) == 0
    checked = []

    def spy(device, cfg, itemsize, batch, prompt, capacity, *rest):
        checked.append((prompt, capacity))
        raise memory.DeviceMemoryError("stop here")

    monkeypatch.setattr(memory, "require_fit_on", spy)
    monkeypatch.setattr(warmup_module, "scratch_weights", None)  # (never reached)
    code, err = _main(capsys, "warmup", "--model", "slim", "--max-prompt", "300", "--max-tokens", "40")
    assert code == 5 and checked == [(300, 340)], (checked, err)


def test_importing_a_file_says_it_is_a_file(tmp_path, monkeypatch, capsys):
    """s27 (the file test made a folder test). `neurobrix import ./config.json` (a checkpoint's file, not its
    folder) is named as a file."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    folder = make_checkpoint(tmp_path / "slim", config=config_dict(**SLIM))
    code, err = _main(capsys, "import", str(folder / "config.json"))
    assert code == 2 and "is a file; give the checkpoint folder that holds config.json" in err, err


def test_only_a_name_too_long_is_taken_for_no_such_folder():
    """s28 (a folder this user may not look into taken for none: `import` then called it "neither a local folder nor
    a Hugging Face id", hiding the OS's "Permission denied"). As root no folder refuses a look, so the OS's errors are
    raised by the test function ``_exists`` is given."""
    import errno

    from neurobrix import store

    def raising(code: int):
        def test(path: Path) -> bool:
            raise OSError(code, "from the OS", str(path))

        return test

    assert store._exists(Path("x"), raising(errno.ENAMETOOLONG)) is False
    for code in (errno.EACCES, errno.EIO):
        with pytest.raises(OSError):
            store._exists(Path("x"), raising(code))
