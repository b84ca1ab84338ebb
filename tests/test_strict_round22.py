"""The twenty-second round, adversarial on the strict runtime: what linear's host-made TMA descriptors are handed (a
dimension of 0, rows that overlap: an expanded or as_strided view with 16-byte aligned strides), and the values a
user types on the command lines of `neurobrix` and `python -m conformance` (an option given twice, an empty value).
Each test failed before the fix it names (an AssertionError from Triton, the view launched, the last value taken or
the empty one read as the option not given) and passes now; the controls pass either way. Small kernels run on the
interpreter."""

from __future__ import annotations

import pytest
import torch

from conformance.__main__ import build_parser as conformance_parser
from neurobrix.cli import build_parser, main
from neurobrix.errors import InvalidInputError
from neurobrix.ops.linear import linear

TMA = {
    "tma": {"variant": "tma", "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 4},
    "tma_split": {
        "variant": "tma_split",
        "BLOCK_M": 16,
        "BLOCK_N": 16,
        "BLOCK_K": 16,
        "GROUP_M": 1,
        "SPLIT_K": 1,
        "SUBTILE": 0,
        "WARP_SPECIALIZE": False,
        "num_warps": 4,
    },
}
TILED = {"variant": "tiled", "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 4}

# -- linear's TMA descriptors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(TMA))
@pytest.mark.parametrize("dims", [(0, 24, 32), (20, 0, 32), (20, 24, 0)], ids=["M=0", "N=0", "K=0"])
def test_tma_refuses_a_dimension_of_zero_by_name(variant, dims):
    """M = 0 reached Triton's ``assert shape_dim > 0`` in TensorDescriptor (an AssertionError, a traceback; nothing
    under ``python -O``), and N = 0 or K = 0 was refused as a misaligned row stride "at address 0x0": each is now
    refused naming the dimensions (InvalidInputError, exit 2)."""
    M, N, K = dims
    with pytest.raises(InvalidInputError, match="every dimension >= 1"):
        linear(torch.ones(M, K), torch.ones(N, K), config=TMA[variant])


def _overlapping_rows() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """x and W pairs whose x or W rows overlap, each row stride a multiple of 16 bytes (what the alignment check
    passes): rows 4 floats apart over 32 columns, and a row expanded to every row (stride 0)."""
    torch.manual_seed(0)
    base = torch.randn(24 * 4 + 32)
    return {
        "x-as_strided": (base.as_strided((20, 32), (4, 1)), torch.randn(24, 32)),
        "weight-as_strided": (torch.randn(20, 32), base.as_strided((24, 32), (4, 1))),
        "x-expanded": (torch.randn(1, 32).expand(20, 32), torch.randn(24, 32)),
        "weight-expanded": (torch.randn(20, 32), torch.randn(1, 32).expand(24, 32)),
    }


@pytest.mark.parametrize("variant", sorted(TMA))
@pytest.mark.parametrize("case", sorted(_overlapping_rows()))
def test_tma_refuses_rows_that_overlap(variant, case):
    """A view whose rows overlap passed the 16-byte checks and was launched through TMA descriptors, on memory no proof
    ran on and that NVIDIA's driver has encoded wrongly (not dense and non-overlapping); refused now, naming the
    tensor and its row stride. The pointer variants read such views as they are (the control below)."""
    x, weight = _overlapping_rows()[case]
    with pytest.raises(InvalidInputError, match="rows overlap"):
        linear(x, weight, config=TMA[variant])


def test_the_tiled_variant_reads_overlapping_rows_as_they_are():
    """Control: the pointer-arithmetic variant computes an expanded weight as float64 does (the refusal above is the
    TMA variants' only)."""
    x, weight = _overlapping_rows()["weight-expanded"]
    got = linear(x, weight, config=TILED).double()
    want = x.double() @ weight.double().T
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)


# -- the command lines -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--model", "m", "--prompt", "hi", "--max-tokens", "1", "--max-tokens", "2"],
        ["run", "--model", "m", "--prompt", "a", "--prompt", "b"],
        ["run", "--model", "m", "--model", "n", "--prompt", "hi"],
        ["run", "--model", "m", "--prompt", "hi", "--temperature", "0.7", "--temperature=0"],
        ["warmup", "--model", "m", "--max-prompt", "8", "--max-prompt=16"],
        ["import", "org/name", "--revision", "v1", "--revision", "main"],
    ],
    ids=["max-tokens", "prompt", "model", "temperature-with-equals", "max-prompt", "revision"],
)
def test_an_option_given_twice_is_refused(argv, capsys):
    """argparse keeps an option's last value: `run --max-tokens 1 --max-tokens 2` generated 2 tokens, `--temperature
    0.7 --temp 0` decoded greedily, silently. Now exit 2 naming the option, before anything runs. (`--temp`, a prefix,
    is no option since walk-through round 45: `tests/test_walk45.py` holds that case.)"""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "given twice" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["certify", "--class", "interpreter", "--dtypes", "fp32", "--kernels", "linear", "--kernels", "rms_norm"],
        ["check", "--class", "interpreter", "--dtype", "fp32", "--dtype", "fp16"],
        ["rank", "--class", "nvidia-h200", "--rounds", "9", "--rounds", "3"],
    ],
    ids=["certify-kernels", "check-dtype", "rank-rounds"],
)
def test_a_conformance_option_given_twice_is_refused(argv, capsys):
    """`certify --kernels linear --kernels rms_norm` certified rms_norm alone; `check --dtype fp32 --dtype fp16`
    checked fp16 alone. Refused now (exit 2), parsed only: nothing is certified or checked."""
    with pytest.raises(SystemExit) as info:
        conformance_parser().parse_args(argv)
    assert info.value.code == 2
    assert "given twice" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--class", "", "--kernel", "rms_norm"],
        ["check", "--class", "interpreter", "--resume", " "],
        ["certify", "--class", "interpreter", "--dtypes", "fp32", "--tables", ""],
    ],
    ids=["check-class", "check-resume", "certify-tables"],
)
def test_a_conformance_option_given_an_empty_value_is_refused(argv, capsys):
    """`check --class ''` checked this device's class and `check --resume ''` resumed nothing (an empty text is false
    to `args.gpu_class or ...`), `certify --tables ''` wrote under the current folder: an empty value is now refused
    naming the option (exit 2), before any check starts."""
    with pytest.raises(SystemExit) as info:
        conformance_parser().parse_args(argv)
    assert info.value.code == 2
    assert "empty value" in capsys.readouterr().err


def test_import_refuses_an_empty_revision(capsys):
    """`import org/name --revision ''` went to the hub with an empty revision, which huggingface_hub reads as its
    default branch: exit 2 now, before any download."""
    with pytest.raises(SystemExit) as info:
        main(["import", "org/name", "--revision", ""])
    assert info.value.code == 2
    assert "empty value" in capsys.readouterr().err


def test_repeatable_options_and_an_empty_prompt_still_parse():
    """Controls: `--where` is repeatable (append), a flag given twice is still the flag, and `--prompt ''` is text,
    refused or run by `run` itself (the chat template's turn), not by the parser."""
    args = conformance_parser().parse_args(["check", "--where", "M=1:", "--where", "N=2:", "--shipped", "--shipped"])
    assert args.where == ["M=1:", "N=2:"] and args.shipped
    args = build_parser().parse_args(["run", "--model", "m", "--prompt", "", "--debug", "--no-chat", "--no-chat"])
    assert args.prompt == "" and args.debug and args.no_chat
    assert not any(name.startswith("_") for name in vars(args))
