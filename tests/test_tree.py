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
