"""Round 47 of planted bugs: this session's new code no round had planted: neurobrix/output.py (strict round 51: a
lost reader ends quietly with 141, diagnostics that cannot be written are dropped, a result that cannot be written is
one line and non-zero, ``write_whole``) and memory.py's changes of strict round 52 (``weight_bytes`` counting a tied
file's own head, ``activation_bytes``' attention term, the chunk mask, ``LOGIT_BYTES``) with run.py's names handed to
the check. Plants: tests/planted47_plants.py, applied one at a time by tests/planted47_driver.py against
test_strict_round51.py (output.py) or test_strict_round52.py and test_memory.py (memory.py, run.py).

23 plants (11 in output.py, 12 in memory.py and run.py), 6 to 82 s a plant on a 2-core machine shared with another
round. Caught before the round, 15: a lost reader's status 0, a closed standard output written into nothing, a FIFO
(or /dev/full) renamed over, a link replaced, a scratch file left by a failed report; in memory.py every plant but two
(the head not counted, counted for a head-only file, run not handing the names, the attention term of 3 x hidden or
none, the mask counted once or over the prompt, 48 B a logit, the mask dropped from plan, the mask left out for a
prompt of less than two chunks).

Survived and now fail a test here, 8 (each checked: the plant in a copy with this file alone):
- w02 (standard output's flush naming nothing) and w04 (a lost reader's flush retried rather than standard output
  pointed at /dev/null): round 51's tests ran with PYTHONUNBUFFERED=1 inherited from the environment, where every
  write fails first and nothing is left to flush at exit; under a user's shell (buffered) the first ended "No space
  left on device" with nothing named, the second "Exception ignored ... BrokenPipeError" and exit 120. The two tests
  here drop PYTHONUNBUFFERED;
- w01 (standard error's ValueError, a closed file object, let through: the error's status 2 lost), w10 (a closed
  standard error, ``sys.stderr`` None, asked whether it is a terminal: import ended in an AttributeError, nothing
  stored), w11 (``take_streams``' restore leaving standard error the command's wrapper, for a caller of ``main``),
  w08 (a report path that does not exist yet written in place: a full disk left half a report);
- k10 (``longest_context`` without the file's names: the context offered too long for the check itself), k11 (the
  GPU's branch of ``require_fit_on`` without the names: a head of its own beside the embedding uncounted on a GPU).

Equivalent: none. Pinned: the chunk mask and its tril copy, both alive, within activation_bytes' mask term. No defect
was found in the clean code. Left open: the other tests of round 51 still inherit PYTHONUNBUFFERED from the
environment (only the two paths above were run buffered); the mask term counts chunk x capacity where the engine's
keys are at most the prompt (an upper bound, kept).
"""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
import weakref

import pytest
import torch
from conftest import REPO
from store_fixtures import config_dict
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from neurobrix import memory
from neurobrix.cli import main
from neurobrix.config import ModelConfig

EMBED, HEAD = memory.EMBED, memory.HEAD


# ---------------------------------------------------------------------------------------------------- output.py
def test_a_closed_standard_error_object_keeps_an_errors_status(monkeypatch):
    """A program that calls ``main`` with ``sys.stderr`` a closed file object (its log closed): the error line's write
    raises ValueError, which the diagnostics drop as they drop an OSError; the status stays the error's (2). A plant
    that caught OSError alone let the ValueError end the command instead."""
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    with pytest.raises(SystemExit) as ended:
        main(["run", "--model", "nosuch-planted47", "--prompt", "hi"])
    assert ended.value.code == 2


def test_main_puts_both_streams_back(monkeypatch, tmp_path):
    """``take_streams`` returns what puts the standard streams back: after ``main`` a caller's own ``sys.stdout`` and
    ``sys.stderr`` are the objects it set, not the command's wrappers (a plant that restored standard output alone
    left standard error a wrapper that drops what the caller writes there)."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["list"]) == 0
    assert sys.stdout is out and sys.stderr is err


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_FSIZE is POSIX's")
def test_a_new_report_cut_short_leaves_no_file(tmp_path):
    """``write_whole`` to a path that does not exist yet, on a disk that fills mid-write (``ulimit -f``): whole or not
    at all, so no file at all, and no scratch file beside it. A plant that took a missing path for no regular file
    wrote into it directly and left half a report there."""
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    script = (
        "import sys\nfrom pathlib import Path\nfrom neurobrix.output import write_whole\n"
        "try:\n    write_whole(Path(sys.argv[1]), '{\"rows\": [' + '0, ' * 500 + '0]}\\n')\n"
        "except OSError as exc:\n    print(exc.errno)\n"
    )

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", script, str(report)],
        env=env,
        cwd=REPO,
        capture_output=True,
        timeout=60,
        preexec_fn=small_files,
    )
    assert done.returncode == 0 and done.stdout.strip(), done.stderr  # the write failed (EFBIG)
    assert list(report.parent.iterdir()) == []


def test_an_import_with_standard_error_closed_stores_the_model(tmp_path):
    """`2>&-`: Python sets ``sys.stderr`` to None, which the diagnostics take as a stream nothing reaches; import asks
    it whether it is a terminal (its progress) and gets no. A plant that asked None itself ended the import in an
    AttributeError, nothing stored."""
    from store_fixtures import make_checkpoint

    source = make_checkpoint(tmp_path / "tiny", use_transformers=False)
    env = dict(os.environ, NEUROBRIX_HOME=str(tmp_path / "home"), HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "neurobrix", "import", str(source)],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        timeout=300,
        preexec_fn=lambda: os.close(2),
    )
    assert done.returncode == 0 and b"imported tiny" in done.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "neurobrix", "list"], env=env, cwd=REPO, capture_output=True, timeout=300
    )
    assert b"\ntiny " in listed.stdout


# ---------------------------------------------------------------------------------------------------- memory.py
def _tied() -> ModelConfig:
    data = config_dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4)
    return ModelConfig.from_hf(
        {**data, "tie_word_embeddings": True, "vocab_size": 4000, "max_position_embeddings": 4096}
    )


def test_the_longest_context_offered_counts_the_files_own_head():
    """A tied config whose file holds its own head, refused: the longest context the message offers is one the check
    (with the same names) lets through. A plant that left the names out of ``longest_context`` offered a context
    vocab x hidden too long, which the check then refused."""
    cfg, names = _tied(), {EMBED, HEAD}
    free = memory.plan(cfg, 4, 1, 100, 100, 0, names).total  # what a context of 100 needs, and no more
    with pytest.raises(memory.DeviceMemoryError) as refused:
        memory.require_fit(cfg, 4, 1, 1000, 1000, free, None, True, names=names)
    fits = int(str(refused.value).split("the longest context that fits is ")[1].split()[0])
    assert fits == 100
    assert memory.plan(cfg, 4, 1, fits, fits, 0, names).total <= free


def test_a_gpus_check_counts_the_files_own_head(monkeypatch):
    """On a GPU (``torch.cuda.mem_get_info`` stood in for), as on the CPU: free memory enough for the count without the
    file's own head is refused, the count with it let through. A plant that dropped the names on the GPU's branch let
    the first through."""
    cfg, names = _tied(), {EMBED, HEAD}
    without = memory.plan(cfg, 2, 1, 5, 8).total
    held = memory.plan(cfg, 2, 1, 5, 8, names=names).total
    assert held > without
    cuda = torch.device("cuda")
    for free, refused in ((without, True), (held, False)):
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device, free=free: (free, 2**36))
        if refused:
            with pytest.raises(memory.DeviceMemoryError):
                memory.require_fit_on(cuda, cfg, 2, 1, 5, 8, names=names)
        else:
            assert memory.require_fit_on(cuda, cfg, 2, 1, 5, 8, names=names).total == held


class _Booleans(TorchDispatchMode):
    """The bytes of the boolean CPU storages alive at their peak (a mask and its copies), each from when an op made it
    until its last tensor is freed."""

    def __init__(self) -> None:
        super().__init__()
        self.now = self.peak = 0

    def _free(self, n: int) -> None:
        self.now -= n

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.dtype == torch.bool:
                n = t.untyped_storage().nbytes()
                self.now += n
                self.peak = max(self.peak, self.now)
                weakref.finalize(t, self._free, n)
        return out


def test_a_chunks_mask_and_its_copy_are_both_counted():
    """The torch backend's chunk attention makes its causal mask of chunk x keys booleans and a lower-triangular copy,
    both alive at once: ``activation_bytes``' mask term (the count of this prompt less that of one chunk, the same
    tokens) holds both. Pinned: a plant that counted one (``chunk * capacity``) was caught by round 52's measure of a
    whole run; this measures the mask alone, whatever slack the other terms have."""
    from neurobrix.model import chunk_length
    from neurobrix.ops.attention import attention_chunk_torch

    cfg = _tied()
    chunk = chunk_length(1)
    prompt = chunk + 52  # two chunks: the remainder, then one whole chunk over every key
    q = torch.zeros(1, chunk, cfg.num_heads, cfg.head_dim)
    kv = torch.zeros(1, prompt, cfg.num_kv_heads, cfg.head_dim)
    with _Booleans() as booleans:
        attention_chunk_torch(q, kv, kv, 1.0)
    term = memory.activation_bytes(cfg, 4, 1, prompt, prompt) - memory.activation_bytes(cfg, 4, 1, chunk, prompt)
    assert booleans.peak == 2 * chunk * prompt
    assert booleans.peak <= term


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full is Linux's")
def test_a_full_buffered_standard_output_is_named_at_its_flush(tmp_path):
    """>/dev/full with standard output buffered (no PYTHONUNBUFFERED, no -u: a user's shell): the failure comes at
    the command's last flush, not at a write, and names standard output there too. Round 51's tests ran under an
    environment with PYTHONUNBUFFERED set, where every write fails first: a plant that named nothing at the flush
    passed them, and the error line was "No space left on device" alone, read as the store's disk."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env.update(NEUROBRIX_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "neurobrix", "list"],
            env=env,
            cwd=REPO,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    assert done.returncode == 1
    assert done.stderr.startswith(b"neurobrix: error: No space left on device: standard output;"), done.stderr


def test_a_lost_reader_of_buffered_output_ends_quietly_with_141(tmp_path):
    """`neurobrix list | head -0` with standard output buffered (no PYTHONUNBUFFERED): the lost reader surfaces at the
    command's last flush, and what is still buffered must not reach the pipe at the interpreter's exit ("Exception
    ignored ... BrokenPipeError", exit 120). Round 51's tests ran unbuffered, where nothing is left to flush then: a
    plant that flushed again instead of pointing standard output at /dev/null passed them."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env.update(NEUROBRIX_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "neurobrix", "list"],
            env=env,
            cwd=REPO,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, b"")
