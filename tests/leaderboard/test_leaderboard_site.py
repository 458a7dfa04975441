"""Round trip (run → submit → verify → add → build) and the site, checked in headless Chromium."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from lb_cdp import Browser, find_chromium

from leaderboard.build import build
from leaderboard.cli import main
from leaderboard.store import add, load_entries


@pytest.fixture(scope="module")
def site(submissions, tmp_path_factory):
    """Both official-suite submissions added through the CLI and built into a site."""
    root = tmp_path_factory.mktemp("board")
    store = root / "submissions"
    for agent in ("random", "oracle"):
        assert main(["add", str(submissions[agent]), "--store", str(store)]) == 0
    assert main(["build", "--store", str(store), "--out", str(root / "site")]) == 0
    return root


def test_round_trip_lands_on_every_output(site):
    entries = load_entries(site / "submissions")
    assert [e["metadata"]["model_name"] for e in entries] and len(entries) == 2
    html_text = (site / "site" / "index.html").read_text()
    markdown = (site / "site" / "LEADERBOARD.md").read_text()
    rows = list(csv.DictReader(io.StringIO((site / "site" / "leaderboard.csv").read_text())))
    for name in ("Oracle agent", "Random agent"):
        assert name in html_text and name in markdown
        assert {r["scope"] for r in rows if r["model_name"] == name} == {"overall", *entries[0]["envs"]}
    overall = {r["model_name"]: r for r in rows if r["scope"] == "overall"}
    assert overall["Oracle agent"]["rank"] == "1" and float(overall["Oracle agent"]["success_rate"]) == 1.0
    assert float(overall["Random agent"]["success_rate"]) < 1.0
    assert overall["Random agent"]["collapse_source"] == "self-reported"
    for entry in entries:  # every row links to its report, and the report exists
        assert f'href="reports/{entry["id"]}.html"' in html_text
        page = (site / "site" / "reports" / f"{entry['id']}.html").read_text()
        assert "<table>" in page and "<th>agent</th>" in page and "<pre>" not in page  # report.md rendered
    assert "<svg" in html_text and html_text.count("<circle") == 2  # both scripted agents report MI


def test_rejected_submission_is_not_stored(mini_submissions, tmp_path):
    # the mini run is not the official split: add verifies against the official suite and refuses it
    report, folder = add(mini_submissions["oracle"], tmp_path / "store")
    assert not report.ok and folder is None
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())


def test_hostile_metadata_is_escaped(tmp_path, site):
    store = tmp_path / "store"
    shutil.copytree(site / "submissions", store)
    entry_dir = next(p for p in store.iterdir() if "oracle" in p.name)
    entry = json.loads((entry_dir / "entry.json").read_text())
    entry["metadata"]["model_name"] = '<script>alert("x")</script>'
    entry["metadata"]["org"] = '=HYPERLINK("http://evil")'
    (entry_dir / "entry.json").write_text(json.dumps(entry))
    build(tmp_path / "site", store)
    page = (tmp_path / "site" / "index.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert "'=HYPERLINK" in (tmp_path / "site" / "leaderboard.csv").read_text()
    assert "<script>alert" not in (tmp_path / "site" / "LEADERBOARD.md").read_text()


def test_rerun_marks_reproduced_only_when_it_agrees(site, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(site / "submissions", store)
    oracle_id = next(p.name for p in store.iterdir() if "oracle" in p.name)
    assert main(["rerun", oracle_id, "--agent", "oracle", "--store", str(store), "--workdir", str(tmp_path / "r")]) == 0
    entry = json.loads((store / oracle_id / "entry.json").read_text())
    assert entry["status"]["reproduced"] and entry["reproduction"]["consistent"]
    random_id = next(p.name for p in store.iterdir() if "random" in p.name)
    assert main(["rerun", random_id, "--agent", "oracle", "--store", str(store), "--workdir", str(tmp_path / "r")]) == 1
    entry = json.loads((store / random_id / "entry.json").read_text())
    assert not entry["status"]["reproduced"] and entry["reproduction"]["consistent"] is False
    build(tmp_path / "site", store)
    page = (tmp_path / "site" / "index.html").read_text()
    oracle_row = next(line for line in page.splitlines() if f'data-id="{oracle_id}"' in line)
    assert 'badge reproduced">reproduced' in oracle_row
    random_row = next(line for line in page.splitlines() if f'data-id="{random_id}"' in line)
    assert 'badge self">self-reported' in random_row


CHROMIUM = find_chromium()


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (installed by scripts/install.sh --test)")
def test_site_in_headless_chromium(site, tmp_path):
    index = site / "site" / "index.html"
    browser = Browser(CHROMIUM)
    try:
        browser.open(index.as_uri())
        assert browser.evaluate("document.title") == "ragen-envs leaderboard"
        rows = "Array.from(document.querySelectorAll('#table-overall tbody tr')).map(r => r.cells[1].textContent)"
        assert browser.evaluate(rows) == ["Oracle agent", "Random agent"]  # ranked by success
        click = "document.querySelectorAll('#table-overall thead th')[{}].querySelector('button').click()"
        browser.evaluate(click.format(5))  # "Overall success": first click sorts descending
        assert browser.evaluate(rows) == ["Oracle agent", "Random agent"]
        browser.evaluate(click.format(5))  # second click: ascending
        assert browser.evaluate(rows) == ["Random agent", "Oracle agent"]
        sort_state = "document.querySelectorAll('#table-overall thead th')[5].getAttribute('aria-sort')"
        assert browser.evaluate(sort_state) == "ascending"
        browser.evaluate(click.format(1))  # "Model": text, ascending first
        assert browser.evaluate(rows) == ["Oracle agent", "Random agent"]
        env_rows = "document.querySelectorAll('table.sortable').length"
        envs = len(load_entries(site / "submissions")[0]["envs"])
        assert browser.evaluate(env_rows) == 2 + envs  # overall, success per env, one per env
        # at 1280 px nothing scrolls sideways: not the page, not the main table, not the per-env success table
        assert browser.evaluate("window.innerWidth") == 1280
        assert browser.evaluate("document.documentElement.scrollWidth") <= 1280
        overflow = ("Array.from(document.querySelectorAll('.table-wrap')).filter(w => w.querySelector('#table-overall, "
                    "#table-success-by-env')).map(w => [w.scrollWidth, w.clientWidth])")  # fmt: skip
        widths = browser.evaluate(overflow)
        assert len(widths) == 2 and all(scroll <= client for scroll, client in widths), widths
        assert browser.evaluate("document.querySelectorAll('#table-success-by-env thead th').length") == 2 + envs
        assert browser.evaluate("document.querySelectorAll('svg.scatter circle').length") == 2
        shot = browser.screenshot()
        assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000
        (tmp_path / "leaderboard.png").write_bytes(shot)
        if os.environ.get("LEADERBOARD_SCREENSHOT"):  # keep it for a human to look at
            Path(os.environ["LEADERBOARD_SCREENSHOT"]).write_bytes(shot)
        report_link = "document.querySelector('#table-overall tbody tr a[href^=\"reports/\"]').getAttribute('href')"
        report = site / "site" / browser.evaluate(report_link)
        assert report.is_file()
        assert browser.errors() == []
        browser.open(report.as_uri())
        assert "report" in browser.evaluate("document.title")
        assert browser.errors() == []
    finally:
        browser.close()
