"""Docs audit round 34: what README.md, CONTRIBUTING.md and docs/release-gate.md tell a reader to type or look up,
held against the code as it is. Each check reads the documents as they stand and is shown, on a planted stale
statement, to fail (the ``planted`` tests), so a rename in the code or a typo in a document fails here, not in a
user's terminal.

- every ``--option`` a document gives a project command (``neurobrix ...``, ``python -m conformance ...``,
  ``python -m gate ...``, ``python -m benchmarks.X ...``, in a code block or inline) exists in that subcommand's
  parser, and a value it shows for an option with choices is one of them;
- every finding code of the gate (``gate.checks.Check``) is in the README's table of codes, and every G-code the
  README and docs/release-gate.md name is one the gate has;
- every repository path the documents name in backticks exists;
- the counts the documents state that the code can count: planted kernel bugs and the fast subset, the catalogue's
  models, the engine's kernels, the nvidia-h200 class's entries.
"""

from __future__ import annotations

import argparse
import ast
import functools
import glob
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "CONTRIBUTING.md", "docs/release-gate.md")


def doc(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------
# options of the project's commands

Tree = dict[tuple[str, ...], argparse.ArgumentParser]


def _walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...], out: Tree) -> Tree:
    out[prefix] = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                _walk(sub, (*prefix, name), out)
    return out


@functools.cache
def _benchmark_options(module: str) -> dict[str, tuple[str, ...] | None]:
    """A benchmark script's options and their choices, read from its source (importing it costs torch)."""
    found: dict[str, tuple[str, ...] | None] = {}
    tree = ast.parse((REPO / "benchmarks" / f"{module}.py").read_text())
    constants = {}  # the module's literal constants, which a `choices=[*TRITONS, ...]` may name
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            choices = next((k.value for k in node.keywords if k.arg == "choices"), None)
            values = None
            if choices is not None:
                code = compile(ast.Expression(choices), module, "eval")
                values = tuple(eval(code, {"__builtins__": {}}, constants))  # noqa: S307 (literals and names only)
            for arg in node.args:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                    found[arg.value] = values
    found["--help"] = None
    return found


def tools() -> dict[str, Tree]:
    import conformance.__main__ as conformance_main
    from gate import cli as gate_cli
    from neurobrix import cli

    return {
        "neurobrix": _walk(cli.build_parser(), (), {}),
        "conformance": _walk(conformance_main.build_parser(), (), {}),
        "gate": _walk(gate_cli.build_parser(), (), {}),
    }


def _options(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...] | None]:
    return {
        o: (tuple(a.choices) if a.choices is not None and not isinstance(a.choices, dict) else None)
        for a in parser._actions
        for o in a.option_strings
    }


# options of other tools the documents show alone in backticks (pip's, pytest's, twine's, git's, ...)
EXTERNAL = (
    "--index-url",
    "--strict",
    "--dist",
    "--system-site-packages",
    "--ephemeral",
    "--attestations",
    "--require-hashes",
    "--single-branch",
)
BENCHMARKS = ("e2e", "kernels", "cold_start", "startup", "long_context", "decode_profile")

COMMAND = re.compile(
    r"(?:^|[\s(`;&|])(?:(?:[A-Z_]+=\S*\s+)*)"
    r"(neurobrix|python -m neurobrix|python -m conformance|python -m gate|python -m benchmarks\.\w+)(?=\s|$|`)"
)
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$|[<>$.\[\]{}*]|^-")


def mentions(text: str) -> Iterator[tuple[str, str, int]]:
    """(tool, the words after it, line number) of every project command in ``text``: in a code block each line
    (continuation lines that start with white space belong to the command above), elsewhere each inline code span,
    a span starting with a subcommand name of the conformance tool or the gate (`check --jobs N`) included."""
    in_block, current, head, line_no = False, None, "", 0
    for line_no, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_block, current = not in_block, None
            continue
        if in_block:
            found = list(COMMAND.finditer(line))
            if found:
                for i, m in enumerate(found):
                    end = found[i + 1].start() if i + 1 < len(found) else len(line)
                    current = m.group(1)
                    head = re.split(r"\s[-\[#]", line[m.end() : end] + " -", maxsplit=1)[0]  # its subcommand
                    yield current, line[m.end() : end], line_no
            elif current and line[:1].isspace():
                yield current, f"{head} {line}", line_no
            else:
                current = None
            continue
        for span in re.findall(r"`([^`]+)`", line):
            found = list(COMMAND.finditer(span))
            for i, m in enumerate(found):
                end = found[i + 1].start() if i + 1 < len(found) else len(span)
                yield m.group(1), span[m.end() : end], line_no
            if not found and OPTION.search(span):
                yield "", span, line_no  # resolved by its first word below


def problems(text: str, trees: dict[str, Tree] | None = None) -> list[str]:
    """Each option a project command in ``text`` is given that its (sub)command's parser does not have, and each
    value shown for an option with choices that is not among them."""
    trees = trees or tools()
    out = []
    for tool, rest, line_no in mentions(text):
        words = rest.replace("[", " ").replace("]", " ").split()
        if tool.startswith("python -m benchmarks."):
            opts = _benchmark_options(tool.rsplit(".", 1)[1])
            where = tool
        else:
            if tool == "":  # an inline span like `check --jobs N`: the tool whose subcommand it names
                candidates = [t for t, tree in trees.items() if (words[0],) in tree]
                if not candidates and words[0].startswith("--"):  # an option alone: some command's, or pip's...
                    opts = {o: None for o in EXTERNAL}
                    for tree in trees.values():
                        for parser in tree.values():
                            opts.update(dict.fromkeys(_options(parser)))
                    for module in BENCHMARKS:
                        opts.update(dict.fromkeys(_benchmark_options(module)))
                    name = words[0].split("=", 1)[0]
                    if name not in opts:
                        out.append(f"line {line_no}: no command of the project has an option {name}")
                    continue
                if not candidates:
                    continue
                merged: dict[str, tuple[str, ...] | None] = {}
                for t in candidates:
                    merged.update(_options(trees[t][(words[0],)]))
                opts, where, words = merged, f"{'/'.join(candidates)} {words[0]}", words[1:]
            else:
                tree = trees[tool.split()[-1]]
                path: tuple[str, ...] = ()
                for w in words:
                    if (*path, w) in tree:
                        path = (*path, w)
                    elif not w.startswith("-"):
                        break
                opts = _options(tree[path])
                where = " ".join((tool.split()[-1], *path))
        for i, w in enumerate(words):
            m = OPTION.fullmatch(w.split("=", 1)[0].rstrip(",;:)"))
            if not m:
                continue
            name = m.group(1)
            if name not in opts:
                out.append(f"line {line_no}: `{where}` has no option {name}")
                continue
            choices = opts[name]
            if not choices:
                continue
            for value in words[i + 1 :]:
                if value.startswith("-") or value.startswith("#") or value in ("&&", "||", ";", "|"):
                    break
                for part in value.split("|"):
                    if part and not PLACEHOLDER.search(part) and part not in choices:
                        out.append(f"line {line_no}: `{where} {name}` takes {'|'.join(choices)}, not {part}")
    return out


@pytest.mark.parametrize("name", DOCS)
def test_every_option_a_document_gives_a_command_exists(name: str) -> None:
    assert problems(doc(name)) == []


def test_planted_option_problems_are_found() -> None:
    """The checker on stale statements: an option renamed, one given to the wrong subcommand, a value outside the
    option's choices, in a code block (with a continuation line) and inline."""
    planted = "\n".join(
        (
            "```sh",
            "neurobrix run --model m --max-token 12",
            "python -m conformance check --class interpreter --profile fast",
            "python -m gate build [--outdir DIR]",
            "    [--isolate]",
            "PYTHONPATH=. python -m benchmarks.e2e --batch 1 --backend triton",
            "```",
            "`neurobrix warmup --model NAME --seed 3` and `certify --shipped` and `neurobrix tables show C --json`",
            "`--max-prompts N` or `--prompt-file FILE`",
        )
    )
    assert problems(planted) == [
        "line 2: `neurobrix run` has no option --max-token",
        "line 3: `conformance check --profile` takes ci|dev|gpu, not fast",
        "line 5: `gate build` has no option --isolate",
        "line 6: `python -m benchmarks.e2e` has no option --backend",
        "line 8: `neurobrix warmup` has no option --seed",
        "line 8: `conformance certify` has no option --shipped",
        "line 9: no command of the project has an option --max-prompts",
    ]


# ---------------------------------------------------------------------------------------------------------------
# the gate's finding codes


def _table_codes(readme: str) -> set[str]:
    section = readme.split("What it refuses, by finding code:", 1)[1].lstrip("\n").split("\n\n", 1)[0]
    codes: set[str] = set()
    for cell in re.findall(r"^\| (G[\d–-]+G?\d*) \|", section, re.M):
        lo, _, hi = cell.replace("–", "-").partition("-")
        hi = hi or lo
        codes.update(f"G{n:03d}" for n in range(int(lo[1:]), int(hi.lstrip("G")) + 1))
    return codes


def code_problems(readme: str, reference: str) -> list[str]:
    from gate.checks import Check

    known = {c.name for c in Check}
    table = _table_codes(readme)
    out = [f"{c} missing from the README's table of finding codes" for c in sorted(known - table)]
    out += [f"{c} in the README's table of finding codes, but no check of the gate" for c in sorted(table - known)]
    for name, text in (("README.md", readme), ("docs/release-gate.md", reference)):
        named = set(re.findall(r"\bG\d{3}\b", text))
        out += [f"{name} names {c}, which the gate does not have" for c in sorted(named - known)]
    return out


def test_every_gate_code_is_documented_and_every_documented_code_exists() -> None:
    assert code_problems(doc("README.md"), doc("docs/release-gate.md")) == []


def test_planted_code_problems_are_found() -> None:
    readme = doc("README.md")
    # a row narrowed (G316-G317 -> G316 alone) and a code the gate does not have, in each document
    planted = readme.replace("| G316–G317 |", "| G316 |").replace("(G310);", "(G310, G321);")
    assert planted != readme
    assert code_problems(planted, doc("docs/release-gate.md") + " G999") == [
        "G317 missing from the README's table of finding codes",
        "README.md names G321, which the gate does not have",
        "docs/release-gate.md names G999, which the gate does not have",
    ]


# ---------------------------------------------------------------------------------------------------------------
# paths

ROOTS = ("neurobrix/", "conformance/", "gate/", "tests/", "tables/", "benchmarks/", "docs/", ".github/", ".ci/")


def path_problems(text: str) -> list[str]:
    """Each repository path (a name starting with one of the repository's folders, or a top-level file) named in
    backticks that does not exist; placeholders (`<op>`, `NN`) and wildcards are matched as patterns. Paths inside
    a built wheel (`neurobrix/_tables/`) or an example of a name the gate refuses are not the repository's."""
    out = []
    for span in sorted(set(re.findall(r"`([^`\s]+)`", text))):
        if not (span.startswith(ROOTS) or span in ("pyproject.toml", "README.md", "CONTRIBUTING.md")):
            continue
        if span.startswith("neurobrix/_tables") or span in ("neurobrix/./_tables", "neurobrix/METADATA"):
            continue
        if span.startswith("tables/nvidia-b200/"):  # CONTRIBUTING's example of a class to add
            continue
        pattern = re.sub(r"<[^>]+>|NN", "*", span).replace("**", "*")
        if not glob.glob(str(REPO / pattern)):
            out.append(f"`{span}` does not exist")
    return out


@pytest.mark.parametrize("name", DOCS)
def test_every_path_a_document_names_exists(name: str) -> None:
    assert path_problems(doc(name)) == []


def test_planted_path_problems_are_found() -> None:
    text = (
        "`neurobrix/ops/linear.py`, `conformance/specs/<op>.py`, `tests/test_strict_roundNN.py`, `neurobrix/cache.py`"
    )
    assert path_problems(text) == ["`neurobrix/cache.py` does not exist"]


# ---------------------------------------------------------------------------------------------------------------
# counts


def counts() -> dict[str, int]:
    import yaml

    from conformance import mutants, shipped
    from neurobrix import ops, tables

    entries = 0
    for index in (REPO / "tables" / "nvidia-h200").glob("*.json"):
        entries += len(json.loads(index.read_text())["entries"])
    linear = json.loads((REPO / "tables" / "nvidia-h200" / "linear.json").read_text())
    own = sum(len(json.loads(f.read_text())["entries"]) for f in (REPO / "tables" / "interpreter").glob("*.json"))
    catalogue = yaml.safe_load((REPO / "conformance" / "catalogue.yaml").read_text())
    targets, _ = shipped.targets("interpreter", tables.load(REPO / "tables"), interpreter=True)
    offered = sum(1 for t in targets if t.where.startswith("offered"))
    latent = sum(1 for t in targets if t.where.startswith(shipped.LATENT))
    return {
        "mutants": len(mutants.MUTANTS),
        "fast": sum(1 for m in mutants.MUTANTS if m.fast),
        "chunk mutants": sum(1 for m in mutants.MUTANTS if m.kernel == "attention_chunk"),
        "tma_split mutants": sum(1 for m in mutants.MUTANTS if "tma_split" in (m.variants or ())),
        "catalogue": len(catalogue["models"]),
        "kernels": len(ops.SPECS),
        "h200": entries,
        "h200 linear": len(linear["entries"]),
        "h200 linear settings": len(linear["configs"]),
        "interpreter entries": own,
        "shipped": len(targets) - offered - latent,
        "offered": offered,
        "latent": latent,
        "entry checks": len(targets) + own,
    }


WORDS = {"eight": 8, "seven": 7, "nine": 9, "ten": 10, "six": 6, "one": 1, "two": 2}


# (what, the document, a pattern whose group is the count it states)
STATED = (
    ("mutants", "README.md", r"`conformance/mutants\.py`, ([\d,]+) of them"),
    ("mutants", "CONTRIBUTING.md", r"\(([\d,]+) planted bugs"),
    ("fast", "README.md", r"the subset CI runs: (\d+) planted bugs"),
    ("chunk mutants", "CONTRIBUTING.md", r"seven when it was added, (\d+) today"),
    ("tma_split mutants", "CONTRIBUTING.md", r"eight when it was added; (\d+) today"),
    ("catalogue", "README.md", r"lists the (\w+) models"),
    ("kernels", "README.md", r"(\w+) Triton kernels \(`neurobrix/ops/`"),
    ("kernels", "README.md", r"over all (\w+) kernels"),
    ("h200", "README.md", r"([\d,]+) entries \(`neurobrix tables list`\)"),
    ("h200", "README.md", r"entries then, ([\d,]+) today\)"),
    ("h200", "README.md", r"linear's 814; ([\d,]+) and \d+ today"),
    ("h200 linear", "README.md", r"every linear entry \(([\d,]+),"),
    ("h200 linear settings", "README.md", r"linear's 814; [\d,]+ and (\d+) today"),
    ("interpreter entries", "README.md", r"own (\d+) entry checks"),
    ("shipped", "README.md", r"Today that is (\d+) settings of the"),
    ("offered", "README.md", r"tables, (\d+) offered ones"),
    ("latent", "README.md", r"offered ones and (\w+) latent one"),
    ("entry checks", "README.md", r"(?<!own )\b(\d+) entry checks"),
    ("entry checks", "CONTRIBUTING.md", r"(?<!own )\b(\d+) entry checks"),
)


def count_problems(readme: str, contributing: str, found: dict[str, int]) -> list[str]:
    """Each count the README and CONTRIBUTING state that differs from the code's."""
    texts = {"README.md": readme, "CONTRIBUTING.md": contributing}
    texts = {name: re.sub(r"\s+", " ", text) for name, text in texts.items()}  # lines wrapped anywhere
    out, seen = [], set()
    for what, name, pattern in STATED:
        for n in re.findall(pattern, texts[name]):
            value = WORDS.get(n.lower()) if n.isalpha() else int(n.replace(",", ""))
            seen.add(what)
            if value != found[what]:
                out.append(f"{name} says {n} for {what}; the code has {found[what]}")
    out += [f"no statement of {what} found (the test's patterns are stale)" for what in sorted(set(found) - seen)]
    return out


def test_the_counts_the_documents_state_are_the_codes() -> None:
    assert count_problems(doc("README.md"), doc("CONTRIBUTING.md"), counts()) == []


def test_planted_count_problems_are_found() -> None:
    found = counts()
    readme = doc("README.md").replace("lists the eight models", "lists the seven models")
    assert count_problems(readme, doc("CONTRIBUTING.md"), {**found, "mutants": found["mutants"] + 1}) == [
        f"README.md says {found['mutants']} for mutants; the code has {found['mutants'] + 1}",
        f"CONTRIBUTING.md says {found['mutants']} for mutants; the code has {found['mutants'] + 1}",
        "README.md says seven for catalogue; the code has 8",
    ]


# ---------------------------------------------------------------------------------------------------------------
# what the README says the benchmarks report


def test_decode_profile_groups_every_engine_kernel_under_its_op() -> None:
    """README: `decode_profile` sums each kernel's duration by op (linear, attention, norm, rotary, silu_mul,
    argmax, embedding). The greedy pick became a Triton kernel of its own (`_greedy_pick_kernel`), whose name no
    group matched: on the triton backends the step's pick was counted as `other`, not `argmax`."""
    from benchmarks.decode_profile import group_of

    kernels = {}
    for source in sorted((REPO / "neurobrix" / "ops").glob("*.py")):
        for node in ast.parse(source.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_kernel"):
                if any("jit" in ast.unparse(d) for d in node.decorator_list):
                    kernels[node.name] = group_of(node.name)
    assert len(kernels) >= 8 and kernels["_greedy_pick_kernel"] == "argmax"
    assert [name for name, group in kernels.items() if group == "other"] == []


def test_the_install_smoke_runs_pip_as_the_reference_says() -> None:
    """docs/release-gate.md spells out the pip command of the install smoke; it named four of the six options the
    gate passes (no --no-cache-dir, no --no-warn-script-location): a reader reproducing the smoke by hand let pip
    use its cache."""
    text = re.sub(r"\s+", " ", doc("docs/release-gate.md"))
    shown = re.search(r"`python -I -m pip install ([^`]*) --prefix <fresh folder>`", text)
    assert shown is not None
    source = ast.parse((REPO / "gate" / "smoke.py").read_text())
    lists = [
        [e.value for e in node.elts if isinstance(e, ast.Constant)]
        for node in ast.walk(source)
        if isinstance(node, ast.List) and any(isinstance(e, ast.Constant) and e.value == "install" for e in node.elts)
    ]
    assert len(lists) == 1
    passed = lists[0][lists[0].index("install") + 1 : lists[0].index("--prefix")]
    assert shown.group(1).split() == passed


def test_the_certified_classes_table_is_the_tables_stacks() -> None:
    """README's "Certified classes and their compiler stack": each class's stack and install command are the ones
    the engine names when it refuses another stack (exit 6), read from the class's tables; a re-certification on
    another torch or Triton leaves the table stale otherwise."""
    from neurobrix import stack, tables

    loaded = tables.load(REPO / "tables")
    section = doc("README.md").split("### Certified classes and their compiler stack", 1)[1].split("###", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \| torch (\S+), Triton (\S+) \| `([^`]+)` \|$", section, re.M)
    assert sorted(row[0] for row in rows) == sorted(loaded.classes)
    for class_id, torch_version, triton_version, command in rows:
        certified = stack.certified_stack(class_id, loaded)
        assert certified is not None
        assert (torch_version, triton_version) == (certified.torch, certified.triton), class_id
        assert command == stack.pip_command(certified), class_id
