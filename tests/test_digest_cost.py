"""Walk-through round 32's follow-up: the settings load computed each entry's digest (``proof.entry``) with two JSON
dumps of its own (its domain and its dtypes) besides the sha256, for every entry of every kernel, which every ``run``
and ``doctor`` pays (2,306 entries for nvidia-h200). ``schema.row_digests`` builds each entry's text from parts
written once per index (the class and each setting, the dimensions' names, each distinct dtypes, the kernel) and
the row's bounds. These tests hold it to the definition (the sorted compact JSON of the whole entry, dumped at once)
on any input, and the binding to writing JSON once per index part, not per entry. No timing here: the figures are
in docs/walkthroughs.md and the README."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from neurobrix import tables
from neurobrix.schema import Domain, entry_digest, row_digests

CLASS = "nvidia-h200"


def defined(kernel: str, class_id: str, key, config, dtypes, bounds) -> str:
    """The digest as its docstring defines it: the whole entry dumped at once as sorted compact JSON."""
    domain = [[dim, bounds[2 * j], bounds[2 * j + 1]] for j, dim in enumerate(key)]
    entry = {"kernel": kernel, "class": class_id, "config": config, "domain": domain, "dtypes": list(dtypes)}
    return hashlib.sha256(json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


# names with what str.format and JSON treat apart: braces, quotes, backslashes, non-ASCII, control characters
NAMES = st.text(alphabet=st.sampled_from('aZ_9{}"\\é\n :,[]'), max_size=6)
VALUES = st.one_of(
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.none(),
    st.text(max_size=4),
    st.integers(-(2**80), 2**80),
)
BOUNDS = st.one_of(st.none(), st.integers(), st.integers(-(2**70), 2**70), st.booleans(), st.floats(allow_nan=False))


@st.composite
def indexes(draw):
    key = draw(st.lists(NAMES, max_size=4, unique=True))
    configs = draw(st.lists(st.dictionaries(NAMES, VALUES, max_size=4), min_size=1, max_size=3))
    dtypes = st.lists(NAMES, min_size=1, max_size=3).map(tuple)
    rows = draw(
        st.lists(
            st.tuples(
                dtypes,
                st.lists(BOUNDS, min_size=2 * len(key), max_size=2 * len(key)).map(tuple),
                st.integers(0, len(configs) - 1),
            ),
            max_size=6,
        )
    )
    return draw(NAMES), draw(NAMES), tuple(key), configs, rows


@settings(max_examples=400, deadline=None)
@given(indexes())
def test_row_digests_are_the_digest_of_each_entry_dumped_whole(drawn):
    """Each row's digest is the one the whole entry dumped at once gives (an integer, a bool, a float and None
    apart; a name with braces, quotes or non-ASCII as JSON writes it), and entry_digest of the same entry agrees."""
    kernel, class_id, key, configs, rows = drawn
    got = row_digests(kernel, class_id, key, configs, rows)
    assert got == [defined(kernel, class_id, key, configs[c], dtypes, bounds) for dtypes, bounds, c in rows]
    for (dtypes, bounds, c), digest in zip(rows, got):
        ranges = tuple((dim, bounds[2 * j], bounds[2 * j + 1]) for j, dim in enumerate(key))
        assert entry_digest(kernel, class_id, Domain(dtypes, ranges), configs[c]) == digest


def test_binding_dumps_json_once_per_part_not_per_entry(monkeypatch):
    """Loading nvidia-h200's linear index (814 entries, bound to their proofs) writes JSON once per setting,
    dimension and distinct dtypes, plus the kernel and class: it wrote two dumps per entry (1,600 and more) before.
    The index still binds (each digest the one its proof carries)."""
    tables.clear_cache()
    loaded = tables.load()
    parsed = loaded._parsed_index(CLASS, "linear")
    dumps, calls = json.dumps, []

    def counted(*args, **kwargs):
        calls.append(args[0])
        return dumps(*args, **kwargs)

    monkeypatch.setattr(json, "dumps", counted)
    index = loaded.index(CLASS, "linear")
    monkeypatch.undo()
    assert index is not None and len(index.rows) == len(parsed.rows) > 500
    parts = len(index.configs) + len(index.key) + len({dtypes for dtypes, _, _ in index.rows}) + 2
    assert 0 < len(calls) <= parts, f"{len(calls)} JSON dumps to bind {len(index.rows)} entries ({parts} parts)"
