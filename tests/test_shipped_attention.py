"""Every shipped setting of the attention kernels checked on the interpreter (the other kernels: test_shipped.py,
which this file splits with so that two workers share the work)."""

from __future__ import annotations

import pytest
from test_shipped import attention, check_shipped

from neurobrix.ops import SPECS


@pytest.mark.parametrize("kernel", [k for k in sorted(SPECS) if attention(k)])
def test_the_interpreter_class_and_every_shipped_attention_setting_pass(kernel):
    check_shipped(kernel)


def test_the_two_files_cover_every_kernel_once():
    assert sorted(k for k in SPECS if attention(k)) == ["attention_chunk", "attention_decode", "attention_prefill"]
