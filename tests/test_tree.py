"""The tests mirror the repository: the tests of a file under ``<folder>/`` live under ``tests/<folder>/``."""

from __future__ import annotations

from tests.helpers.paths import ROOT

TESTS = ROOT / "tests"
SHARED = {TESTS, TESTS / "helpers"}  # repo-wide tests (layering, this one) and the helpers every folder imports


def test_every_test_folder_is_named_after_a_folder_of_the_repository():
    strays = sorted(
        str(folder.relative_to(TESTS))
        for folder in {path.parent for path in TESTS.rglob("test_*.py")} - SHARED
        if not (ROOT / folder.relative_to(TESTS)).is_dir()
    )
    assert not strays, f"test folders with no repository folder of the same path: {strays}"


def test_helpers_hold_no_tests():
    assert not list((TESTS / "helpers").glob("test_*.py"))


def test_a_conftest_below_the_root_sits_in_a_folder_without_subfolders():
    # pytest puts each folder holding a conftest.py on sys.path, so a subfolder there named after a library
    # (tests/baselines/verl) becomes an empty namespace package `verl` wherever the real one is not installed, and
    # `pytest.importorskip("verl")` passes instead of skipping. The root's subfolders are the repo's own folders.
    nested = sorted(
        str(conftest.relative_to(TESTS))
        for conftest in TESTS.rglob("conftest.py")
        if conftest.parent != TESTS
        and any(sub.is_dir() and sub.name != "__pycache__" for sub in conftest.parent.iterdir())
    )
    assert not nested, f"conftest.py files in folders with subfolders: {nested}"
