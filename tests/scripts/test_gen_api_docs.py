"""docs/api.md: the public API as the modules' ``__all__`` declare it, current, and every name in it documented."""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers.paths import load_script

gen = load_script("scripts/gen_api_docs.py")


def test_the_page_is_current():
    assert gen.main(["--check"]) == 0, "docs/api.md is stale: python scripts/gen_api_docs.py"


def test_every_listed_name_of_every_api_module_is_on_the_page():
    text = gen.PAGE.read_text(encoding="utf-8")
    for module in gen.API:
        assert f"## `{module}`" in text
        for name in gen.exported(gen.parse(module), module):
            assert f"| `{name}` |" in text, f"{module}.{name}"


def fake_repo(tmp_path, monkeypatch, body: str, init: str = "") -> None:
    package = tmp_path / "ragen_envs"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(init))
    (package / "thing.py").write_text(textwrap.dedent(body))
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    monkeypatch.setattr(gen, "API", ("ragen_envs.thing",))


def test_a_name_in_all_defined_nowhere_fails_the_build(tmp_path, monkeypatch, capsys):
    fake_repo(tmp_path, monkeypatch, '"""A module."""\n__all__ = ["ghost"]\n')
    assert gen.main(["--check"]) == 1
    assert "ragen_envs.thing.ghost: listed in __all__ but defined nowhere" in capsys.readouterr().err


@pytest.mark.parametrize(
    "body",
    [
        '"""A module."""\n__all__ = ["f"]\ndef f():\n    pass\n',
        '"""A module."""\n__all__ = ["LIMIT"]\nLIMIT = 3\n',
    ],
)
def test_an_undocumented_public_name_fails_the_build(tmp_path, monkeypatch, capsys, body):
    fake_repo(tmp_path, monkeypatch, body)
    assert gen.main(["--check"]) == 1
    assert "without a docstring" in capsys.readouterr().err


def test_re_exports_are_followed_to_their_definition(tmp_path, monkeypatch):
    init = '"""The package."""\n'
    body = '''\
        """A module."""
        from ragen_envs.other import helper
        __all__ = ["helper", "LIMIT"]
        # How many times at most.
        LIMIT = 3
        '''
    fake_repo(tmp_path, monkeypatch, body, init)
    (tmp_path / "ragen_envs" / "other.py").write_text('def helper():\n    """Helps, once."""\n')
    text = gen.page()
    assert (
        "| `helper` | function | Helps, once. |" in text and "| `LIMIT` | constant | How many times at most. |" in text
    )
