"""Round 58's planted bugs, in what landed with kernel-mutant round kmut18, text round 48 and walk-through round 41:
the launch lint's layouts (``offsets.Layout``, ``LAYOUTS``, ``layout_problems``, ``unheld_strides``) and its reading of
hints, casts and picked tuples, the launch record's call of ``layout_problems``; the refusal of weights that are not
finite (``model._refuse_non_finite`` and the tensors fed to it) and tokenizer.json's added tokens read as transformers
reads them (``tokenizer._file_added_tokens``); ``MISMATCH_FIX`` in doctor, ``decode n/a``; the
RECORD rows the engine checks (``tables.RECORD_HASHES``, ``record_digest``). For tests/planted60_driver.py: id, file,
the exact text replaced (found once in its file), its replacement, and the existing tests a contributor would run for
it (the outcome of each: tests/test_planted60.py's docstring)."""

from __future__ import annotations

OFFSETS = "conformance/offsets.py"
HARNESS = "conformance/harness.py"
MODEL = "neurobrix/model.py"
TOKENIZER = "neurobrix/tokenizer.py"
DOCTOR = "neurobrix/doctor.py"
GENERATE = "neurobrix/generate.py"
TABLES = "neurobrix/tables.py"
STACK = "neurobrix/stack.py"
LINT = ["tests/test_kmut18.py"]
TEXT = ["tests/test_text_round48.py"]
WALK = ["tests/test_walk41.py"]
RECORD = [
    "tests/test_gate_round44.py::test_the_engine_reads_record_hashes_as_the_gate_does",
    "tests/test_gate_round44.py::test_the_engine_holds_nothing_to_a_row_hashed_with_md5",
]


def p(id: str, file: str, old: str, new: str, tests: list[str], timeout: int = 900) -> dict:
    return {"id": id, "file": file, "old": old, "new": new, "tests": tests, "timeout": timeout}


PLANTS = [
    # ------------------------------------------------------------------ the layouts
    # l01: the walked span counted to the last position's start ((n - 1) strides), not past its end
    p(
        "l01",
        OFFSETS,
        "if sizes[0] > 1 and outer != 0 and sizes[1] * walked > abs(outer):",
        "if sizes[0] > 1 and outer != 0 and (sizes[1] - 1) * walked > abs(outer):",
        LINT,
    ),
    # l02: the fused row taken as three times q's heads (the group size left out): a padded row up to 3 HQ passes
    p(
        "l02",
        OFFSETS,
        'return a["HQ"] + 2 * (a["HQ"] // a["G"])',
        'return a["HQ"] + 2 * a["HQ"]',
        LINT,
    ),
    # l03: a stride counted as held when its kernel has any layout (keyed by the kernel, not the parameter)
    p(
        "l03",
        OFFSETS,
        'if param.startswith("stride_") and (f"{module_name}.{kernel}", param) not in held:',
        'if param.startswith("stride_") and f"{module_name}.{kernel}" not in LAYOUTS:',
        LINT,
    ),
    # l04: a batch of one held to the fold rule too (a size-1 axis's stride is any value)
    p(
        "l04",
        OFFSETS,
        "if sizes[0] > 1 and outer != 0 and sizes[1] * walked > abs(outer):",
        "if outer != 0 and sizes[1] * walked > abs(outer):",
        LINT,
    ),
    # l05: the launch record's layouts read from the keyword arguments only (a tensor passed by position not seen)
    p(
        "l05",
        HARNESS,
        "bound = {**dict(zip(inspect.signature(fn).parameters, args)), **kwargs}",
        "bound = dict(kwargs)",
        LINT,
    ),
    # ------------------------------------------------------------------ the lint's reading
    # o01: tl.multiple_of no longer a wrapper (an int64 offset under an alignment hint read as int32)
    p(
        "o01",
        OFFSETS,
        '"tl.multiple_of tl.max_contiguous tl.max_constancy',
        '"tl.max_contiguous tl.max_constancy',
        LINT,
    ),
    # o02: a pick by a non-literal index read as the tuple's first element
    p(
        "o02",
        OFFSETS,
        "return [pair for alternatives in found for pair in alternatives]  # whichever element it picks",
        "return found[0]  # whichever element it picks",
        LINT,
    ),
    # o03: t[-1] read as t[1] (the minus sign of the tree's UnaryOp dropped)
    p(
        "o03",
        OFFSETS,
        "index = ast.Constant(-literal.value)",
        "index = ast.Constant(literal.value)",
        LINT,
    ),
    # o04: a pick from pointers and int32 offsets refused, from pointers and int64 offsets not
    p(
        "o04",
        OFFSETS,
        "if PTR in kinds and kinds & {NARROW, WIDE}:",
        "if PTR in kinds and NARROW in kinds:",
        LINT,
    ),
    # o05: tl.cast(x, dtype=...) (the keyword form) not read as a cast
    p(
        "o05",
        OFFSETS,
        'dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)',
        "dtype = None",
        LINT,
    ),
    # ------------------------------------------------------------------ weights that are not finite
    # m01: a tied checkpoint holding only the head: the head (the embedding too) not checked
    p(
        "m01",
        MODEL,
        "head = take(head_name, feeds_layers=embed_name not in names)",
        "head = take(head_name, feeds_layers=False)",
        TEXT,
    ),
    # m02: a tensor refused only where both its extremes are not finite
    p(
        "m02",
        MODEL,
        "finite = torch.isfinite(torch.stack(list(extremes.values()))).all(dim=-1).tolist()",
        "finite = torch.isfinite(torch.stack(list(extremes.values()))).any(dim=-1).tolist()",
        TEXT,
    ),
    # ------------------------------------------------------------------ tokenizer.json's added tokens
    # t01: each added token built from its text and special flag only (lstrip, rstrip, single_word, normalized lost)
    p(
        "t01",
        TOKENIZER,
        "tokens[at] = AddedToken(**fields)",
        'tokens[at] = AddedToken(fields.pop("content"), special=fields.get("special", False))',
        TEXT,
    ),
    # t02: added_tokens.json winning over tokenizer.json at the same id
    p(
        "t02",
        TOKENIZER,
        "decoder |= {i: {k: getattr(token, k) for k in fields} for i, token in in_file.items()}",
        "decoder = {i: {k: getattr(token, k) for k in fields} for i, token in in_file.items()} | decoder",
        TEXT,
    ),
    # ------------------------------------------------------------------ walk-through 41
    # w01: doctor's fix appended to the first mismatch's line, not the last (several files: said in the middle)
    p(
        "w01",
        DOCTOR,
        'said[-1] += f"\\n{MISMATCH_FIX}"',
        'said[0] += f"\\n{MISMATCH_FIX}"',
        WALK,
    ),
    # w02: decode n/a said for statistics that do not count their decoded tokens (None) too
    p(
        "w02",
        GENERATE,
        "if self.decoded_tokens == 0",
        "if not self.decoded_tokens",
        [*WALK, "tests/test_cli.py::test_the_statistics_line_without_a_load_time"],
    ),
    # w03: the decoded tokens counted on the first sequence only (a batch whose first ends at once: n/a)
    p(
        "w03",
        GENERATE,
        "decoded = sum(len(o) for o in outs) - batch",
        "decoded = len(outs[0]) - 1",
        WALK,
    ),
    # ------------------------------------------------------------------ RECORD rows
    # r01: sha224 checked too (a SHA-2 digest pip does not check RECORD rows with)
    p(
        "r01",
        TABLES,
        'RECORD_HASHES = ("sha256", "sha384", "sha512")',
        'RECORD_HASHES = ("sha224", "sha256", "sha384", "sha512")',
        RECORD,
    ),
    # r02: the kernels' RECORD rows digested with sha256 whatever the row names
    p(
        "r02",
        STACK,
        "digest = record_digest(entry.hash.mode, path.read_bytes())",
        'digest = record_digest("sha256", path.read_bytes())',
        RECORD,
    ),
    # r03: the digest in standard base64 (+ and /), not the urlsafe form RECORD rows are written in
    p(
        "r03",
        TABLES,
        'return base64.urlsafe_b64encode(hashlib.new(algorithm, data).digest()).rstrip(b"=").decode()',
        'return base64.b64encode(hashlib.new(algorithm, data).digest()).rstrip(b"=").decode()',
        RECORD,
    ),
]
