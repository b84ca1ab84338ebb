"""Round 47's planted bugs, in this session's new code on main that no round has planted: neurobrix/output.py
(strict round 51: a lost reader ends quietly with 141, diagnostics that cannot be written are dropped, a result that
cannot be written is one line and non-zero, ``write_whole``) and neurobrix/memory.py's changes of strict round 52
(``weight_bytes`` counting a tied file's own head, ``activation_bytes``' attention term, the chunk mask,
``LOGIT_BYTES``) with run.py's names passed to the check. For tests/planted47_driver.py: id, file, the exact text
replaced, its replacement, and the existing tests a contributor would run for it (the outcome of each:
tests/test_planted47.py's docstring)."""

from __future__ import annotations

OUTPUT = ["tests/test_strict_round51.py"]
MEMORY = ["tests/test_strict_round52.py", "tests/test_memory.py"]
OUTF, MEMF, RUNF = "neurobrix/output.py", "neurobrix/memory.py", "neurobrix/run.py"


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 600) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ output.py
    p(
        "w01",
        OUTF,
        """                self._stream.write(text)
        except (OSError, ValueError):""",
        """                self._stream.write(text)
        except OSError:""",
        OUTPUT,
    ),
    p(
        "w02",
        OUTF,
        """    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            exc.filename = exc.filename or STANDARD_OUTPUT
            raise
""",
        """    def flush(self) -> None:
        self._stream.flush()
""",
        OUTPUT,
    ),
    p("w03", OUTF, "    return BROKEN_PIPE_EXIT\n", "    return 0\n", OUTPUT),
    p(
        "w04",
        OUTF,
        "        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())\n    return BROKEN_PIPE_EXIT",
        "        sys.stdout.flush()\n    return BROKEN_PIPE_EXIT",
        OUTPUT,
    ),
    p(
        "w05",
        OUTF,
        'raise OSError(errno.EBADF, "standard output is closed; the command\'s output could not be written")',
        "return len(text)",
        OUTPUT,
    ),
    p("w06", OUTF, "    if not stat.S_ISREG(mode):", "    if stat.S_ISCHR(mode):", OUTPUT),
    p("w07", OUTF, "    target = Path(os.path.realpath(path))", "    target = Path(path)", OUTPUT),
    p("w08", OUTF, "        mode = stat.S_IFREG\n", "        mode = 0\n", OUTPUT),
    p(
        "w09",
        OUTF,
        "    finally:\n        tmp.unlink(missing_ok=True)",
        "    except OSError:\n        raise",
        OUTPUT,
    ),
    p(
        "w10",
        OUTF,
        "            return self._stream is not None and bool(self._stream.isatty())",
        "            return bool(self._stream.isatty())",
        OUTPUT,
    ),
    p("w11", OUTF, "        sys.stdout, sys.stderr = stdout, stderr", "        sys.stdout = stdout", OUTPUT),
    # ------------------------------------------------------------------ memory.py / run.py (strict round 52)
    p("k01", MEMF, "        shapes[HEAD] = shapes[EMBED]", "        shapes[EMBED] = shapes[EMBED]", MEMORY),
    p(
        "k02",
        MEMF,
        "    if cfg.tie_word_embeddings and EMBED in names and HEAD in names:",
        "    if cfg.tie_word_embeddings and HEAD in names:",
        MEMORY,
    ),
    p(
        "k03",
        RUNF,
        "batch, prompt_len, capacity, names=names)",
        "batch, prompt_len, capacity)",
        MEMORY,
    ),
    p(
        "k04",
        MEMF,
        "    attention = cfg.qkv_size + 3 * cfg.num_heads * cfg.head_dim",
        "    attention = cfg.qkv_size + 3 * cfg.hidden_size",
        MEMORY,
    ),
    p(
        "k05",
        MEMF,
        "max(widest + cfg.intermediate_size, attention)) * itemsize",
        "widest + cfg.intermediate_size) * itemsize",
        MEMORY,
    ),
    p(
        "k06",
        MEMF,
        "    mask = 2 * chunk * capacity if prompt > chunk else 0",
        "    mask = chunk * capacity if prompt > chunk else 0",
        MEMORY,
    ),
    p(
        "k07",
        MEMF,
        "    mask = 2 * chunk * capacity if prompt > chunk else 0",
        "    mask = 2 * chunk * prompt if prompt > chunk else 0",
        MEMORY,
    ),
    p("k08", MEMF, "LOGIT_BYTES = 64", "LOGIT_BYTES = 48", MEMORY),
    p(
        "k09",
        MEMF,
        "        activation_bytes(cfg, itemsize, batch, prompt, capacity) + rotary_bytes(cfg, capacity),",
        "        activation_bytes(cfg, itemsize, batch, prompt) + rotary_bytes(cfg, capacity),",
        MEMORY,
    ),
    p(
        "k10",
        MEMF,
        "        if plan(cfg, itemsize, batch, mid, mid, reserve, names).total <= free:",
        "        if plan(cfg, itemsize, batch, mid, mid, reserve).total <= free:",
        MEMORY,
    ),
    p(
        "k11",
        MEMF,
        "free, total, what=what, lengths=lengths, names=names)",
        "free, total, what=what, lengths=lengths)",
        MEMORY,
    ),
    p(
        "k12",
        MEMF,
        "    mask = 2 * chunk * capacity if prompt > chunk else 0",
        "    mask = 2 * chunk * capacity if prompt > 2 * chunk else 0",
        MEMORY,
    ),
]
