"""``leaderboard rerun`` with an ``hf:`` agent: a tiny randomly initialised Llama built offline (no hub)."""

from __future__ import annotations

import json

import pytest
from lb_helpers import MINI

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from harness.cli import main as harness  # noqa: E402
from leaderboard.build import build  # noqa: E402
from leaderboard.cli import main  # noqa: E402
from tests.helpers.tiny_lm import build_tiny_llama  # noqa: E402


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_llama(
        tmp_path_factory.mktemp("tiny-llama"), corpus_seeds=10, vocab_size=300, hidden=16, intermediate=32, layers=1,
        heads=2, kv_heads=1,
    )  # fmt: skip


@pytest.mark.slow
def test_rerun_with_hf_agent_marks_the_row_reproduced(tiny_model, tmp_path, capsys):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matmuls on shared cores: one thread is much faster
    try:
        season = MINI.to_dict()
        season["entries"] = [
            dict(e, seeds=e["seeds"][:2]) for e in season["entries"] if e["env_id"] == "ragen/Bandit-v0"
        ]
        suite_file = tmp_path / "bandit.json"
        suite_file.write_text(json.dumps(season))
        spec = f"hf:{tiny_model}"
        run = ["run", spec, "--suite", str(suite_file), "--max-new-tokens", "6", "--device", "cpu", "--mi-samples", "4"]
        assert harness([*run, "--out", str(tmp_path), "--run-id", "sub", "--quiet", "--no-plots"]) == 0
        archive = tmp_path / "tiny.ragen.tar.gz"
        submit = ["submit", str(tmp_path / "sub"), "--model-name", "Tiny", "--org", "test", "--contact", "a@b.c"]
        assert (
            harness(
                [*submit, "--weights", "https://example.org/tiny", "--suite", str(suite_file), "--out", str(archive)]
            )
            == 0
        )
        store = tmp_path / "store"
        assert main(["add", str(archive), "--store", str(store), "--suite", str(suite_file)]) == 0
        entry_id = next(store.iterdir()).name
        capsys.readouterr()
        rerun = ["rerun", entry_id, "--agent", spec, "--store", str(store), "--suite", str(suite_file)]
        assert main([*rerun, "--workdir", str(tmp_path / "reruns")]) == 0
        assert capsys.readouterr().out.startswith("reproduced")
        entry = json.loads((store / entry_id / "entry.json").read_text())
        assert entry["status"]["reproduced"]
        reproduction = entry["reproduction"]
        assert reproduction["agent"] == spec and reproduction["consistent"]
        # the rerun repeated the submission's options (same seed and model): same episodes, same entropy
        assert (
            reproduction["envs"]["ragen/Bandit-v0"]["token_entropy"]
            == entry["self_reported"]["ragen/Bandit-v0"]["token_entropy"]
        )
        assert reproduction["envs"]["ragen/Bandit-v0"]["token_entropy"] > 0
        from leaderboard.suite import load_suite

        build(tmp_path / "site", store, suite=load_suite(suite_file))
        page = (tmp_path / "site" / "index.html").read_text()
        assert 'badge reproduced">reproduced' in page and 'href="https://example.org/tiny"' in page
    finally:
        torch.set_num_threads(threads)
