"""A submission's report.md on the site: rendered as HTML (tables, code, lists), with everything it carries from
outside shown as text, and the strict Content Security Policy kept."""

from __future__ import annotations

import pytest

from leaderboard.report_html import CSP, report_page

pytest.importorskip("markdown")

HOSTILE = """# Run x <script>alert(1)</script>

| env | agent | MI |
|---|---|---|
| a<b | <b onclick=x>r</b> | 0.1 |

- `code <i>` [bad](javascript:alert(1)) [ok](https://example.org) [local](summary.json) <img src=x onerror=alert(1)>

<div><script>alert(2)</script></div>

![mi_entropy.png](mi_entropy.png)
"""


def test_report_markdown_becomes_html():
    page = report_page("Model — report", "# Run r\n\n| env | MI |\n|---|---|\n| Bandit | 0.1 |\n\n- `n/a` means x\n")
    assert "<table>" in page and "<td>Bandit</td>" in page and "<li><code>n/a</code> means x</li>" in page
    assert "<pre>" not in page and "<h1>Run r</h1>" in page


def test_everything_from_outside_stays_text():
    page = report_page("T <b>", HOSTILE)
    assert f'content="{CSP}"' in page and CSP == "default-src 'none'; style-src 'unsafe-inline'"
    body = page.split("</style>", 1)[1]
    for raw in ("<script", "<b onclick", "<img", "<div>", "javascript:"):
        assert raw not in body, raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and "&lt;img src=x onerror=alert(1)&gt;" in body
    assert '<a href="https://example.org">ok</a>' in body and '<a href="summary.json">local</a>' in body
    assert "<a>bad</a>" in body and '<span class="plot">[plot: mi_entropy.png]</span>' in body
    assert "<title>T &lt;b&gt;</title>" in page
