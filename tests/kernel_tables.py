"""Test fixtures: interpreter-class settings for the kernel and engine tests (test data, never shipped).

Every domain is unbounded (each dimension from 1 upward) so any odd shape has a setting; tests that
need another setting hand it to the launcher, or write their own tables with ``write_tables``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import torch
import triton
import yaml

import neurobrix
from conformance import certify
from conformance.certify import write_table
from neurobrix.ops import SPECS
from neurobrix.schema import Domain, Entry, Proof
from neurobrix.stack import kernel_source

PROOF = Proof(1, 0.0, "test fixture", "none (test fixture)", 0.0, 0.0, 1, ())
CONFIGS: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {
    "linear": [
        ({"M": [1, 4]}, {"variant": "gemv", "BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": 3, "num_warps": 4}),
        (
            {"M": [5, None]},
            {
                "variant": "tiled",
                "BLOCK_M": 32,
                "BLOCK_N": 32,
                "BLOCK_K": 32,
                "GROUP_M": 4,
                "num_warps": 4,
                "num_stages": 2,
            },
        ),
    ],
    "rms_norm": [({}, {"BLOCK_M": 4, "num_warps": 4})],
    "rotary": [({}, {"BLOCK_H": 4, "num_warps": 4})],
    "silu_mul": [({}, {"BLOCK_M": 8, "BLOCK_I": 32, "num_warps": 4})],
    "attention_prefill": [({}, {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2})],
    "attention_chunk": [({}, {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2})],
    "attention_decode": [({}, {"SPLITS": 3, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2})],
    "greedy_pick": [({}, {"BLOCK_V": 64, "num_warps": 4})],
}


# the software stack of this machine's interpreter class, as certify would record it (so that certify
# may add entries to a fixture table)
STACK = {
    "device": {"backend": "interpreter", "vendor": "triton", "name": "Triton interpreter (CPU)"},
    "torch": str(torch.__version__),
    "triton": str(triton.__version__),
    "neurobrix": neurobrix.__version__,
}


def _ranges(kernel: str, ranges: Mapping[str, list[int | None]]) -> tuple[tuple[str, int, int | None], ...]:
    return tuple((dim, *ranges.get(dim, [1, None])) for dim in SPECS[kernel].key)  # type: ignore[misc]


def fixture_config(kernel: str, shape: Mapping[str, int]) -> dict[str, Any]:
    """The fixture setting whose domain holds this key shape."""
    for ranges, config in CONFIGS[kernel]:
        if Domain(("fp32",), _ranges(kernel, ranges)).contains("fp32", shape):
            return config
    raise KeyError(f"no fixture setting of {kernel} holds {dict(shape)}")


def write_kernel(root: Path, kernel: str, entries: list, dtypes=("fp32", "fp16"), **provenance: Any) -> None:
    """One kernel's settings index and proofs in an interpreter-class folder at ``root``, tracked."""
    # proven on the kernel's code as it is (run launches a table's settings on no other code)
    prov = {
        **STACK,
        "git_commit": "-",
        "date": "-",
        "command": "tests/kernel_tables.py",
        "kernel_source": kernel_source(kernel),
        **provenance,
    }
    prov = {name: value for name, value in prov.items() if value is not None}  # (kernel_source=None: bound to none)
    rows = [Entry(Domain(tuple(dtypes), _ranges(kernel, ranges)), config, PROOF) for ranges, config in entries]
    # certify refuses to write a setting run would refuse (strict round 26); the fixture writes such tables on
    # purpose, as a hand editing them would, for the tests of what run, doctor and check then do
    with mock.patch.object(certify, "config_problem", lambda kernel, config: None):
        write_table(root, "interpreter", kernel, rows, prov)


def write_tables(root: Path, configs: dict | None = None, dtypes=("fp32", "fp16"), **provenance: Any) -> Path:
    """An interpreter-class tables folder with one settings index and proofs per kernel, tracked, at ``root``
    (``provenance``: facts to record instead of this machine's, e.g. another triton)."""
    configs = {**CONFIGS, **(configs or {})}
    (root / "interpreter").mkdir(parents=True, exist_ok=True)
    (root / "interpreter" / "class.yaml").write_text(
        yaml.safe_dump(
            {
                "format": 1,
                "class": "interpreter",
                "description": "Triton interpreter (test fixture)",
                "match": {"backend": "interpreter"},
            }
        )
    )
    for kernel, entries in configs.items():
        write_kernel(root, kernel, entries, dtypes, **provenance)
    return root


def class_device(match: dict) -> dict:
    """The ``device`` a proof's provenance records when made on a GPU of the class ``match`` describes (its
    ``device_name`` pattern taken as the name)."""
    return {
        "backend": match["backend"],
        "vendor": match["vendor"],
        "name": match["device_name"],
        "compute_capability": list(match["compute_capability"]),
        "multiprocessor_count": match["multiprocessor_count"],
        "total_memory_gib": 80.0,
    }


def write_gpu_class(root: Path, class_id: str = "fake-hopper", launch: tuple[str, ...] = ("pdl",)) -> Path:
    """A CUDA class (compute capability 9.0, which no machine here has) holding the interpreter class's settings of
    ``root`` (written by ``write_tables``), with these launch features: what a plan's launch features are tested on,
    since the interpreter class may list none. Tracked; returns ``root``."""
    from conftest import retrack

    from neurobrix import tables as nb_tables
    from neurobrix.schema import parse_proofs

    source, folder = root / "interpreter", root / class_id
    folder.mkdir()
    match = {
        "backend": "cuda",
        "vendor": "nvidia",
        "device_name": "NVIDIA Fake Hopper",
        "compute_capability": [9, 0],
        "multiprocessor_count": 132,
    }
    for path in sorted(source.glob(f"*{nb_tables.PROOFS_SUFFIX}")):  # written as certify writes a class's tables
        kernel = path.name[: -len(nb_tables.PROOFS_SUFFIX)]
        table = parse_proofs(nb_tables.read_yaml(path, str(path)), str(path), "interpreter", kernel)
        # proven (as far as the runtime and `tables verify` read it) on a device of this class
        provenance = {**dict(table.provenance), "device": class_device(match)}
        write_table(root, class_id, kernel, list(table.entries), provenance)
    identity = {"format": 1, "class": class_id, "description": "A made-up Hopper (test fixture)", "match": match}
    (folder / "class.yaml").write_text(yaml.safe_dump({**identity, **({"launch": list(launch)} if launch else {})}))
    retrack(root)
    return root
