"""The model-store commands of the `neurobrix` CLI: import, list and remove (the work is in store.py)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from .errors import counted, printable
from .output import STANDARD_OUTPUT
from .store import StoredModel, import_model, list_models, models_dir, remove


def format_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "kB", "MB"):
        if value < 1000:
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def _as_json(model: StoredModel) -> dict[str, Any]:
    return {
        "name": model.name,
        "path": str(model.path),
        "source": model.source,
        "from_hub": model.from_hub,
        "revision": model.revision,
        "commit": model.commit,
        "imported": model.imported,
        "size": model.size,
        "files": list(model.files),
        "damaged": model.damaged,
        "newer_format": model.newer,  # imported by a later NeuroBrix: ``damaged`` says so, and nothing is broken
    }


def cmd_import(args: argparse.Namespace) -> int:
    model = import_model(args.source, accept_license=args.accept_license, revision=args.revision, progress=True)
    commit = f" at {model.commit[:12]}" if model.commit else ""
    try:
        print(
            f"imported {model.name}{commit}: {counted(len(model.files), 'file')}, {format_size(model.size)} in "
            f"{printable(str(model.path))}"
        )
        code = _after_import(args, model)
        sys.stdout.flush()  # here: buffered (a file, a pipe), a lost output surfaces at the flush, not at the print
        return code
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) once the model is stored whole: it stays, so say so
        sys.stdout.flush()
        print(
            f"{model.name} was imported whole before the interruption and stays in the store "
            f"(`neurobrix remove {shlex.quote(model.name)}` removes it)",
            file=sys.stderr,
        )
        raise
    except OSError as exc:  # its output lost (a full disk, a closed pipe) once the model is stored whole: it stays
        if exc.filename == STANDARD_OUTPUT and not isinstance(exc, BrokenPipeError):
            print(
                f"{model.name} was imported whole and stays in the store; its output could not be written",
                file=sys.stderr,
            )
        raise


def _after_import(args: argparse.Namespace, model: StoredModel) -> int:
    """What import prints or does once the model is stored: warm it up, or the commands that come next."""
    gpu_class = _certified_gpu_class()
    if args.warmup and gpu_class is not None:
        sys.stdout.flush()
        from .cli import cmd_warmup

        cmd_warmup(argparse.Namespace(model=model.name, max_tokens=None, max_prompt=None, dtype=None))
    elif args.warmup:
        print(
            f"--warmup: {_nothing_to_compile()}; `neurobrix warmup` on a GPU of a certified class compiles its kernels"
        )
    elif gpu_class is not None:
        print(
            f"compile its kernels for {gpu_class} once, before the first run: "
            f"neurobrix warmup --model {shlex.quote(model.name)}"
        )
    print(f"run it with: {_run_command(model.name)}")
    return 0


def _nothing_to_compile() -> str:
    """Why ``import --warmup`` compiles nothing here: the interpreter, no GPU at all, or a GPU of no certified class."""
    from .gpu import interpreter_enabled

    if interpreter_enabled():
        return "the Triton interpreter (TRITON_INTERPRET) runs kernels uncompiled, so nothing to compile"
    import torch  # late: only to see whether this machine has a GPU

    if not torch.cuda.is_available():
        return "no GPU here, so nothing to compile"
    return "this GPU is of no certified class (`neurobrix doctor` says why), so nothing to compile"


def _certified_gpu_class() -> str | None:
    """This machine's certified GPU class, None without one (no GPU, an uncertified one, or the interpreter,
    which compiles nothing and needs no warmup)."""
    from .errors import NeuroBrixError
    from .gpu import detect_class, interpreter_enabled

    if interpreter_enabled():
        return None
    import torch  # late: only to see whether this machine has a GPU

    if not torch.cuda.is_available():
        return None
    try:
        return detect_class().id
    except NeuroBrixError:  # an uncertified GPU, or tables that cannot be read: `run` says why
        return None


def _run_command(name: str) -> str:
    """A `neurobrix run` command that works on this machine as it is (``run`` itself fits the default
    --max-tokens to a small model's context). Without a GPU the certified kernels run in the Triton
    interpreter, about a token a second even for a tiny model, so the command asks for a few tokens."""
    from .gpu import interpreter_enabled

    command = f'neurobrix run --model {shlex.quote(name)} --prompt "Hello"'  # a name may hold a space
    if not interpreter_enabled():
        import torch  # late: only to see whether this machine has a GPU

        if torch.cuda.is_available():
            return command
    return (
        f"TRITON_INTERPRET=1 {command} --max-tokens 12\n  (no GPU here: TRITON_INTERPRET=1 runs the certified "
        "kernels in the Triton interpreter, slowly; --backend torch runs PyTorch's own kernels instead)"
    )


def cmd_list(args: argparse.Namespace) -> int:
    models = list_models()
    if args.json:
        print(json.dumps({"store": str(models_dir()), "models": [_as_json(m) for m in models]}, indent=2))
        return 0
    if not models:
        store = printable(str(models_dir()))
        print(f"no models imported yet (store: {store}); import one with `neurobrix import <hf-id|folder>`")
        return 0
    # each text as the manifest holds it, but what a terminal would obey (a source folder named with ESC or CR)
    names = [printable(m.name) for m in models]
    width = max(map(len, names))
    print(f"{'NAME':<{width}}  {'SIZE':>9}  {'REVISION':<12}  {'IMPORTED':<25}  SOURCE")
    for name, m in zip(names, models):
        revision = printable((m.commit or "")[:12] or m.revision or "-")
        print(
            f"{name:<{width}}  {format_size(m.size):>9}  {revision:<12}  {printable(m.imported or '-'):<25}  "
            f"{printable(m.source)}" + ("  NEWER FORMAT" if m.newer else "  DAMAGED" if m.damaged else "")
        )
        if m.damaged:
            print(f"{'':<{width}}  {printable(m.damaged)}")
    print(f"store: {printable(str(models_dir()))}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    model = remove(args.name)
    damaged = (
        "; it was imported by a newer NeuroBrix"
        if model.newer
        else f"; it was damaged: {model.damaged}"
        if model.damaged
        else ""
    )
    freed = model.size if model.freed is None else model.freed
    where = printable(str(model.path.parent))
    print(f"removed {model.name} ({format_size(freed)} freed from {where}){printable(damaged)}")
    return 0


def register(commands: Any, common: dict[str, Any]) -> None:
    """Add `import`, `list` and `remove` to the `neurobrix` subcommands (an argparse subparsers object);
    ``common``: what every subcommand's parser takes (its shared options)."""
    p_import = commands.add_parser(
        "import",
        **common,
        help="import a model from the Hugging Face hub or a local folder into the store",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""\
Copy or download a Llama-family checkpoint into the model store ($NEUROBRIX_HOME/models,
default ~/.cache/neurobrix/models): config.json, the *.safetensors weights (every shard of the
index), tokenizer.json, and tokenizer_config.json, generation_config.json, chat_template.jinja,
additional_chat_templates/*.jinja, special_tokens_map.json, added_tokens.json when the model has them.
Pickle weights are never downloaded and no code from the repository runs. config.json is checked
before any weight is fetched; a failed import leaves the store as it was, and re-importing
replaces a model only once the new copy is complete.""",
        epilog="""\
examples:
  neurobrix import TinyLlama/TinyLlama-1.1B-Chat-v1.0
  neurobrix import meta-llama/Llama-3.2-1B --accept-license   (gated: accept on the hub, `hf auth login`)
  neurobrix import ./my-checkpoint                             (stored as my-checkpoint)
  neurobrix import TinyLlama/TinyLlama-1.1B-Chat-v1.0 --warmup (then compile its kernels for this GPU)
  HF_HUB_OFFLINE=1 neurobrix import org/name                   (from the Hugging Face cache, no network)""",
    )
    p_import.add_argument(
        "source",
        metavar="SOURCE",
        help="a Hugging Face id (org/name, stored as org/name) or a local folder with config.json, "
        "tokenizer.json and *.safetensors (stored under the folder's name)",
    )
    p_import.add_argument(
        "--accept-license",
        action="store_true",
        help="needed for gated models: you accept the model's licence (also accept it on the model's hub page, "
        "and log in with `hf auth login` or set HF_TOKEN)",
    )
    p_import.add_argument("--revision", metavar="R", help="hub branch, tag or commit (default: the main branch)")
    p_import.add_argument(
        "--warmup",
        action="store_true",
        help="then compile every kernel its runs can need on this machine's GPU class (`neurobrix warmup`, "
        "once), so that no run compiles; without it, import prints that command",
    )
    p_import.set_defaults(func=cmd_import)

    p_list = commands.add_parser(
        "list",
        **common,
        help="the imported models",
        description="List the models in the store with their size, commit, import date and source. A damaged "
        "model (a file missing or of another size, an unreadable manifest) is marked DAMAGED with the reason, one "
        "a newer NeuroBrix imported NEWER FORMAT (upgrade to run it); `neurobrix run` refuses either the same way. "
        "Temporary folders left by imports that died are removed.",
    )
    p_list.add_argument("--json", action="store_true", help="print as JSON")
    p_list.set_defaults(func=cmd_list)

    p_remove = commands.add_parser(
        "remove",
        **common,
        help="delete an imported model from the store",
        description="Delete a model from the store, damaged or not (the Hugging Face cache, if any, is left "
        "alone). Temporary folders left by imports that died are removed.",
    )
    p_remove.add_argument("name", metavar="NAME", help="a stored name as `neurobrix list` shows it (or its hub id)")
    p_remove.set_defaults(func=cmd_remove)
