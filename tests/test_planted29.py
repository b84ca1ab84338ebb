"""Round 29 of planted bugs: the code the newest rounds changed and round 28 left unplanted: gate round 33 (G003 for
an upload folder that gains an entry while judged, the publish step's report binding and format check), gate round
32's limits and report lines, strict round 32 (a store behind a link that leads nowhere, a model removed during a run,
two imports of one model at once, the ``--prompt-file`` cap), strict rounds 31 and 33 (``printable``,
``NeuroBrixError.lines``, ``schema.device_problem`` and ``foreign_device``), text round 28's stop strings and text
round 29's decay. The plants and the driver: tests/planted29_plants.py, tests/planted29_driver.py (round 24's driver
on this round's plants, in a copy made a git checkout of itself as round 26's). Each test here fails with the plant
named in its docstring and passes on the clean code (tests/test_planted_anchors.py holds every round's anchors).

Outcomes (59 plants): 43 caught by the tests before this round (b01-b04; c03, c05, c06, c09-c11; d02-d07; e01-e03;
f01-f04; h01, h05-h09; r01, r02, r04-r08; s01-s04, s06, s07; x02), 16 survived: 13 are caught here (c01, c02, c04,
c07, c08, r03, h02, h03, h10, h11, e04, d01, x01) and 3 are equivalent: b05 (``Budget.take`` never taking more than
is left: every inflation is held to what is left before it is taken, so ``left`` never goes below 0), h04
(``store_problem``'s dangling-link branch asking ``not is_dir()`` for ``not exists()``: the branch before it returns
for any store that exists and is not a folder, so past it a link is a folder exactly when it exists) and s05 (stop
strings ``[]`` sent to the vocabulary's spelling: refused all the same, exit 2, in the words of transformers' own
ValueError for an empty list, "no token ... can end any of them"). The gate plants ran against gate round 33's tests
(or round 32's) and the units, the publish-step plants against round 33's and test_workflows.py, the store and
prompt-file plants against strict round 32's and the store's, the error plants against strict round 31, the newcomer
round and test_cli.py, the device plants against strict rounds 33 and 16, the stop-string plants against text rounds
28, 9 and 14, the decay plants against text round 29; each also against the planted-bug rounds that closed survivors
in the same code (20, 27, 28).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from gate import checker
from neurobrix import cli, store


def test_an_upload_folder_changed_while_judged_names_each_entry_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted c01: a link to a folder called "a folder" (the link is the entry: twine would upload what it points
    at); c02: a hidden file that appeared taken for an upload (`dist/*` skips it, as the gate's first listing does);
    c07: the folder named as given (``.`` is named "", so "twine upload /*"); c08: the messages of an entry that
    appeared and one that changed swapped; c04: only the dists of the folder's first listing kept, so an entry there
    from the start (G001 already) was reported as appeared while judged too."""
    folder = tmp_path / "dist"
    folder.mkdir()
    wheel, sdist = folder / "neurobrix-1-py3-none-any.whl", folder / "neurobrix-1.tar.gz"
    wheel.write_bytes(b"a wheel")
    sdist.write_bytes(b"an sdist")
    (folder / "notes.txt").write_text("there from the start: G001, not G003\n")
    monkeypatch.chdir(folder)
    listings: dict[Path, dict[str, str]] = {}
    checker.collect([Path(".")], listings)
    assert checker._folder_changed(listings) == []
    (folder / ".hidden").write_text("not uploaded by dist/*\n")
    wheel.unlink()
    wheel.symlink_to(tmp_path)  # the wheel made a link to a folder
    (folder / "neurobrix-1-cp311-none-any.whl").write_bytes(b"another wheel")
    found = [(f.code, f.dist, f.path, f.message) for f in checker._folder_changed(listings)]
    assert found == [
        (
            "G003",
            "dist/",
            "neurobrix-1-cp311-none-any.whl",
            "appeared in the upload folder while the gate judged it (a file), never judged: "
            "`twine upload dist/*` would upload it",
        ),
        (
            "G003",
            "dist/",
            wheel.name,
            "a file when the gate read the folder, a link now: what would be uploaded is not what was judged",
        ),
    ]


# --- neurobrix/store.py: two imports of one model at once (strict round 32) ----------------------------------------


def _two_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A stored model ``tiny`` (``which`` says "old") and a complete new folder for it (``which`` says "new")."""
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "home"))
    models = store.models_dir()
    dest, new = models / "tiny", models / ".tmp-new"
    for folder, which in ((dest, "old"), (new, "new")):
        folder.mkdir(parents=True)
        (folder / "which").write_text(which)
    return dest, new


def test_a_model_moved_aside_by_another_import_first_is_replaced_all_the_same(tmp_path, monkeypatch):
    """Planted h11: the model there moved aside by the other import between the look and the move (the move's
    FileNotFoundError) ended this import in an error, where nothing is left to move aside and its folder goes in."""
    dest, new = _two_models(tmp_path, monkeypatch)
    real, moved = os.rename, []

    def rename(src, dst):
        if Path(src) == dest and not moved:  # the other import moves the model aside just before this one does
            moved.append(real(dest, tmp_path / "taken"))
        return real(src, dst)

    monkeypatch.setattr(store.os, "rename", rename)
    store._install(new, dest)
    assert moved and (dest / "which").read_text() == "new" and sorted(os.listdir(dest.parent)) == ["tiny"]


def test_an_import_that_fails_after_another_installed_its_model_leaves_that_model(tmp_path, monkeypatch):
    """Planted h10: the first model moved aside put back where the move of the new folder failed for good, and the
    last one there (another import's, installed meanwhile) deleted with the rest set aside."""
    dest, new = _two_models(tmp_path, monkeypatch)
    real, tries = os.rename, []

    def rename(src, dst):
        if Path(src) == new:
            tries.append(dst)
            if len(tries) == 1:  # another import installs its model first
                dest.mkdir()
                (dest / "which").write_text("other")
                raise OSError(errno.ENOTEMPTY, "Directory not empty")
            raise OSError(errno.EIO, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(store.os, "rename", rename)
    with pytest.raises(OSError, match="Input/output error"):
        store._install(new, dest)
    assert (dest / "which").read_text() == "other"
    assert sorted(os.listdir(dest.parent)) == [".tmp-new", "tiny"]  # nothing else left aside


# --- neurobrix/errors.py: an error's lines ------------------------------------------------------------------------


def test_an_errors_lines_are_texts_whatever_it_was_given(capsys):
    """Planted e04: the lines kept as given (a path, a number): the CLI escapes each as a text, and a path given as a
    line ended the command in a TypeError traceback instead of its message."""
    from neurobrix.errors import TablesError

    error = TablesError(Path("/tables/linear.yaml"), "does not match its list:", 3)
    assert error.lines == ("/tables/linear.yaml", "does not match its list:", "3")
    assert str(error) == "/tables/linear.yaml\ndoes not match its list:\n3"
    with pytest.raises(SystemExit) as exit_:
        cli._error(str(error), error.exit_code, error.lines)
    assert exit_.value.code == 3
    assert capsys.readouterr().err == "neurobrix: error: /tables/linear.yaml\ndoes not match its list:\n3\n"


# --- neurobrix/generate.py: exponential_decay_length_penalty (text round 29) ---------------------------------------


def test_a_decay_that_starts_mid_token_fails_at_the_first_token_past_its_start_and_says_why():
    """Planted x01: every refusal said "out of range", a negative factor to a fraction too (no real number: a start
    of 0.5 and a factor of -2.0 fail at new token 2, the first past the start, its power 0.5)."""
    from types import SimpleNamespace

    from neurobrix.errors import UsageError
    from neurobrix.generate import decay_failure, decay_scale

    assert decay_failure(SimpleNamespace(exponential_decay_length_penalty=(0.5, -2.0)), 3, 5) == 2
    with pytest.raises(UsageError, match=r"-2\.0 \*\* 0\.5 at new token 2 is no real number"):
        decay_scale((0.5, -2.0), 3, 4)
    with pytest.raises(UsageError, match=r"1e\+300 \*\* 2 at new token 3 is out of range"):
        decay_scale((0, 1e300), 3, 5)


# --- .github/workflows/release.yml: the report's sha256 passed from the gate job to the publish job ----------------


def test_the_gate_job_passes_on_the_reports_sha256_alone(tmp_path):
    """Planted r03: the step recording the output wrote sha256sum's whole line ("<sha256>  -"), so the publish step
    refused every report, the gate's own included. The release chain's test cannot see it: a plant leaves the
    working tree dirty, and the chain must then be refused anyway."""
    import hashlib

    from test_workflows import gate_job_outputs, load, release_env

    env = release_env(tmp_path)
    report = Path(env["RUNNER_TEMP"]) / "gate" / "report.json"
    report.parent.mkdir(parents=True)
    report.write_bytes(b'{"format": 1, "verdict": "passed"}\n')
    work = tmp_path / "work"
    work.mkdir()
    outputs = gate_job_outputs(load("release.yml")["jobs"]["gate"], work, env, tmp_path / "bin")
    assert outputs == {"report-sha256": hashlib.sha256(report.read_bytes()).hexdigest()}


# --- neurobrix/store.py: a home behind a link (strict round 32) ----------------------------------------------------


def test_a_home_behind_a_link_to_a_folder_is_used_and_one_under_a_dangling_link_names_it(tmp_path, monkeypatch):
    """Planted h02: every home that is a link refused, one to a real folder too (a common layout: ~/.cache a link to
    another disk); h03: a home under a dangling link said to be the link itself ("NEUROBRIX_HOME=.../dangling/home is
    a symbolic link")."""
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "linked" / "home"))
    assert store.home() == tmp_path / "linked" / "home" and store.store_problem() is None
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "linked"))
    assert store.home() == tmp_path / "linked" and store.store_problem() is None
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    monkeypatch.setenv("NEUROBRIX_HOME", str(tmp_path / "dangling" / "home"))
    with pytest.raises(cli.UsageError) as refused:
        store.home()
    assert str(refused.value).startswith(
        f"NEUROBRIX_HOME={tmp_path / 'dangling' / 'home'} lies under {tmp_path / 'dangling'}, which is a symbolic link "
        f"to {tmp_path / 'nowhere'}, which leads nowhere"
    )


# --- neurobrix/schema.py: device_problem (strict round 33) --------------------------------------------------------


def test_a_device_of_another_vendor_is_not_the_classs():
    """Planted d01: the vendor left out of the facts compared: a proof recording another vendor's device of the
    same name pattern, capability and multiprocessor count was taken as made on the class's GPU."""
    from neurobrix.schema import ClassMatch, device_problem

    hopper = ClassMatch("cuda", "nvidia", "NVIDIA H100*", (9, 0), 132)
    facts = {"backend": "cuda", "vendor": "nvidia", "name": "NVIDIA H100 80GB HBM3", "compute_capability": [9, 0]}
    assert device_problem(hopper, {**facts, "multiprocessor_count": 132}) is None
    assert device_problem(hopper, {**facts, "multiprocessor_count": 132, "vendor": "amd"}) == (
        "vendor 'amd', the class's 'nvidia'"
    )
    assert device_problem(hopper, {**facts, "multiprocessor_count": 132, "vendor": None}) is not None
