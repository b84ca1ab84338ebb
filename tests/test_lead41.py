"""Found by the lead in the forty-first session.

Strictness round 46's race seen again under a loaded CI (its `remove` case, at ef26580): `neurobrix run` checked the
stored model, `remove` took the folder while the run built its tokenizer, and the run ended in a raw "No such file or
directory: .../tokenizer.json" (exit 1): the tokenizer reads tokenizer.json twice (the library's load, then its text
for the rebuild rules), and the second read was not a file error of the tokenizer's. Both reads are now, and a stored
model's tokenizer or config.json that a file error stops is judged by what happened to the folder: "was removed while
this command read it" (exit 7)."""

from __future__ import annotations

import shutil

import pytest
from store_fixtures import make_checkpoint

from neurobrix import store
from neurobrix.store import DamagedModelError


def test_a_model_removed_between_the_tokenizers_two_reads_is_said_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    store.import_model(str(make_checkpoint(tmp_path / "tiny", use_transformers=False)), progress=False)
    stored = store.resolve("tiny")  # checked, as run checks it
    from tokenizers import Tokenizer as HFTokenizer

    loaded = HFTokenizer.from_file

    def removed_after(path):  # the library read tokenizer.json; then `remove` took the folder
        got = loaded(path)
        shutil.rmtree(stored.path)
        return got

    monkeypatch.setattr(HFTokenizer, "from_file", staticmethod(removed_after))
    with pytest.raises(DamagedModelError, match="was removed while this command read it") as info:
        stored.tokenizer()
    assert info.value.exit_code == 7 and "damaged" not in str(info.value)
