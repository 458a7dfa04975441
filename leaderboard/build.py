"""The static site: ``LEADERBOARD.md``, ``leaderboard.csv`` and ``index.html`` from the stored entries.

``index.html`` needs no server: one file with inline CSS, a small inline script for sortable columns
(``site/sort.js``) and an inline SVG scatter of success against MI. Every submitter-supplied string is
HTML-escaped (and CSV cells that a spreadsheet would run as a formula are quoted), since model names and
reports come from outside. Each row links to the submission's report under ``reports/``.
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import io
import math
import re
import unicodedata
from importlib import resources
from pathlib import Path
from typing import Any

from harness.metrics import lookup
from leaderboard.schema import bounded_number
from leaderboard.store import DEFAULT_STORE, load_entries
from leaderboard.suite import OFFICIAL, Suite, check_split

COLLAPSE_KEYS = ("mi_estimate", "retrieval_accuracy", "token_entropy")
"""The self-reported metrics the pages show (names of the harness's metric registry)."""
RANK_BY = "success_rate"
"""The metric submissions are ranked by, best first in its registered direction."""


# ---- rows: one per submission, with the numbers the pages show ---------------------------------------------
def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if _finite(v) is not None]
    try:
        return math.fsum(present) / len(present) if present else None
    except OverflowError:  # only a hand-edited store could hold such values; show nothing rather than fail
        return None


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else None: the store is read, never trusted."""
    if type(value) not in (int, float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond the float range
        return None
    return number if math.isfinite(number) else None


def collapse_source(entry: dict[str, Any]) -> str:
    """``"reproduced"`` when a maintainer's rerun supplied the collapse metrics, else ``"self-reported"``."""
    return "reproduced" if entry.get("status", {}).get("reproduced") else "self-reported"


def _collapse(entry: dict[str, Any], env_id: str) -> dict[str, float | None]:
    if collapse_source(entry) == "reproduced":
        source = (entry.get("reproduction") or {}).get("envs", {}).get(env_id, {})
    else:
        source = entry.get("self_reported", {}).get(env_id, {})
    source = source if isinstance(source, dict) else {}
    return {key: bounded_number(key, source.get(key)) for key in COLLAPSE_KEYS}


def rows_for(entries: list[dict[str, Any]], suite: Suite) -> list[dict[str, Any]]:
    """Entries as ranked rows: overall success (macro mean over the suite's envs) descending, then date."""
    rows = []
    for entry in entries:
        meta = entry.get("metadata", {})
        meta = {k: v if isinstance(v, str) else str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}
        envs = {}
        for env_id in suite.env_ids:
            stored = entry.get("envs", {}).get(env_id, {})
            numbers = {k: _finite(v) for k, v in (stored.items() if isinstance(stored, dict) else ())}
            for key in ("success_rate", "success_se"):  # fractions: anything else is not a verified number
                if numbers.get(key) is not None and not 0.0 <= numbers[key] <= 1.0:
                    numbers[key] = None
            numbers["episodes"] = int(numbers.get("episodes") or 0)
            numbers.update(_collapse(entry, env_id))
            envs[env_id] = numbers
        overall = {key: _mean([envs[e].get(key) for e in suite.env_ids]) for key in ("success_rate", *COLLAPSE_KEYS)}
        rows.append({"id": entry["id"], "meta": meta, "envs": envs, "overall": overall, "source": collapse_source(entry),
                     "reproduced": collapse_source(entry) == "reproduced", "has_report": entry.get("has_report", False)})  # fmt: skip
    best_first = -1.0 if lookup(RANK_BY).higher_is_better else 1.0
    rows.sort(key=lambda r: (best_first * (r["overall"][RANK_BY] or 0.0), r["meta"].get("date", ""), r["id"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return rows


def _env_rank(rows: list[dict[str, Any]], env_id: str) -> list[dict[str, Any]]:
    best_first = -1.0 if lookup(RANK_BY).higher_is_better else 1.0
    return sorted(rows, key=lambda r: (best_first * (r["envs"][env_id].get(RANK_BY) or 0.0), r["rank"]))


# ---- formatting ---------------------------------------------------------------------------------------------
def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _plain(text: Any) -> str:
    """Submitter text with every control, line-break and invisible format character (CR, bidi overrides,
    zero-width marks) shown as U+FFFD: verify refuses them in new metadata, and no output format may carry one
    that an older or hand-edited entry holds."""
    return "".join("\ufffd" if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in str(text))


def _sort(value: Any) -> str:
    if value is None:
        return ""
    number = _finite(value)
    return repr(number) if number is not None else html.escape(_plain(value), quote=True)


def _badges(row: dict[str, Any]) -> str:
    second = '<span class="badge reproduced">reproduced</span>' if row["reproduced"] else (
        '<span class="badge self">self-reported</span>')  # fmt: skip
    return '<span class="badge verified">verified</span>' + second


def _weights_html(meta: dict[str, Any]) -> str:
    weights = str(meta.get("weights", ""))
    if weights.startswith(("https://", "http://")):
        return f'<a href="{html.escape(_plain(weights), quote=True)}" rel="nofollow noopener">open</a>'
    return html.escape(_plain(weights) or "—")


def _report_link(row: dict[str, Any]) -> str:
    if not row["has_report"]:
        return "—"
    return f'<a href="reports/{html.escape(row["id"], quote=True)}.html">report</a>'


def _th(label: str, numeric: bool = False) -> str:
    cls = ' class="num"' if numeric else ""
    return f'<th{cls}><button type="button">{html.escape(label)}</button></th>'


def _td(text: str, sort: Any = None, numeric: bool = False, raw: bool = False) -> str:
    cls = ' class="num"' if numeric else ""
    data = f' data-sort="{_sort(sort)}"' if sort is not None or numeric else ""
    return f"<td{cls}{data}>{text if raw else html.escape(_plain(text))}</td>"


def _success_cell(numbers: dict[str, Any], stacked: bool = False) -> str:
    """Success ± its standard error (``stacked``: the error on a line of its own, for narrow columns)."""
    value, se = numbers.get("success_rate"), numbers.get("success_se")
    gap = "<br>" if stacked else " "
    text = _pct(value) + (f'{gap}<span class="se">± {100 * se:.1f}</span>' if isinstance(se, (int, float)) else "")
    return _td(text, value, numeric=True, raw=True)


def _overall_table(rows: list[dict[str, Any]], suite: Suite) -> str:
    """The main table: one row per submission, its overall numbers (per-env success is its own table, so this one
    fits a 1280-pixel window whatever the number of envs)."""
    heads = [_th("Rank", True), _th("Model"), _th("Org"), _th("Params"), _th("Weights"), _th("Overall success", True)]
    heads += [
        _th("MI", True),
        _th("Retrieval acc.", True),
        _th("Token entropy", True),
        _th("Status"),
        _th("Date"),
        _th("Report"),
    ]
    body = []
    for row in rows:
        meta, overall = row["meta"], row["overall"]
        cells = [_td(str(row["rank"]), row["rank"], numeric=True), _td(str(meta.get("model_name", ""))),
                 _td(str(meta.get("org", ""))), _td(str(meta.get("parameters", ""))),
                 _td(_weights_html(meta), meta.get("weights", ""), raw=True),
                 _td(_pct(overall["success_rate"]), overall["success_rate"], numeric=True)]  # fmt: skip
        cells += [_td(_num(overall["mi_estimate"]), overall["mi_estimate"], numeric=True),
                  _td(_pct(overall["retrieval_accuracy"]), overall["retrieval_accuracy"], numeric=True),
                  _td(_num(overall["token_entropy"]), overall["token_entropy"], numeric=True),
                  _td(_badges(row), row["source"], raw=True), _td(str(meta.get("date", ""))),
                  _td(_report_link(row), raw=True)]  # fmt: skip
        body.append(f'<tr data-id="{html.escape(row["id"], quote=True)}">' + "".join(cells) + "</tr>")
    return _table("overall", heads, body)


def _success_by_env_table(rows: list[dict[str, Any]], suite: Suite) -> str:
    """Success per env, one column per env, the standard error under each rate (narrow columns: a dozen envs fit
    a 1280-pixel window)."""
    heads = [_th("Rank", True), _th("Model")]
    heads += [_th(env_id.removeprefix("ragen/"), True) for env_id in suite.env_ids]
    body = []
    for row in rows:
        cells = [_td(str(row["rank"]), row["rank"], numeric=True), _td(str(row["meta"].get("model_name", "")))]
        cells += [_success_cell(row["envs"][env_id], stacked=True) for env_id in suite.env_ids]
        body.append(f'<tr data-id="{html.escape(row["id"], quote=True)}">' + "".join(cells) + "</tr>")
    return _table("success-by-env", heads, body)


def _env_table(rows: list[dict[str, Any]], env_id: str) -> str:
    heads = [_th("Rank", True), _th("Model"), _th("Org"), _th("Success", True), _th("Mean return", True),
             _th("Mean turns", True), _th("Episodes", True), _th("MI", True), _th("Retrieval acc.", True),
             _th("Token entropy", True), _th("Status"), _th("Report")]  # fmt: skip
    body = []
    for rank, row in enumerate(_env_rank(rows, env_id), start=1):
        numbers, meta = row["envs"][env_id], row["meta"]
        cells = [_td(str(rank), rank, numeric=True), _td(str(meta.get("model_name", ""))), _td(str(meta.get("org", ""))),
                 _success_cell(numbers), _td(_num(numbers.get("mean_return")), numbers.get("mean_return"), numeric=True),
                 _td(_num(numbers.get("mean_turns"), 2), numbers.get("mean_turns"), numeric=True),
                 _td(str(numbers.get("episodes", 0)), numbers.get("episodes", 0), numeric=True),
                 _td(_num(numbers.get("mi_estimate")), numbers.get("mi_estimate"), numeric=True),
                 _td(_pct(numbers.get("retrieval_accuracy")), numbers.get("retrieval_accuracy"), numeric=True),
                 _td(_num(numbers.get("token_entropy")), numbers.get("token_entropy"), numeric=True),
                 _td(_badges(row), row["source"], raw=True), _td(_report_link(row), raw=True)]  # fmt: skip
        body.append(f'<tr data-id="{html.escape(row["id"], quote=True)}">' + "".join(cells) + "</tr>")
    return _table(env_id, heads, body)


def _table(key: str, heads: list[str], body: list[str]) -> str:
    if not body:
        return '<p class="empty">No verified submissions yet.</p>'
    return (
        f'<div class="table-wrap"><table class="sortable" id="table-{html.escape(key.replace("/", "-"), quote=True)}">'
        f"<thead><tr>{''.join(heads)}</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table></div>"
    )


def scatter_svg(rows: list[dict[str, Any]], width: int = 640, height: int = 400) -> str:
    """Overall success (y) against mean MI estimate (x), one dot per submission that reports MI."""
    points = [(r["overall"]["mi_estimate"], r["overall"]["success_rate"], r) for r in rows
              if r["overall"]["mi_estimate"] is not None and r["overall"]["success_rate"] is not None]  # fmt: skip
    if not points:
        return '<p class="empty">No submission reports an MI estimate yet.</p>'
    left, right, top, bottom = 56, 16, 16, 44
    x_low = min(0.0, min(p[0] for p in points))
    x_high = max(p[0] for p in points)
    x_high = x_high + 0.1 * (x_high - x_low) if x_high > x_low else x_low + 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * plot_w

    def sy(y: float) -> float:
        return top + (1.0 - y) * plot_h

    parts = [f'<svg class="scatter" role="img" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
             "<title>Success rate against mutual information</title>"]  # fmt: skip
    for i in range(6):
        y = i / 5
        parts.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{sy(y):.1f}" y2="{sy(y):.1f}"/>')
        parts.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{100 * y:.0f}%</text>')
    for i in range(6):
        x = x_low + i * (x_high - x_low) / 5
        parts.append(f'<line class="grid" y1="{top}" y2="{height - bottom}" x1="{sx(x):.1f}" x2="{sx(x):.1f}"/>')
        parts.append(f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{x:.2f}</text>')
    parts.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}"/>')
    parts.append(f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}"/>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">MI estimate (nats)</text>')
    parts.append(
        f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">Success rate</text>'
    )
    for mi, success, row in points:
        label = html.escape(
            f"{_plain(row['meta'].get('model_name', ''))}: success {100 * success:.1f}%, MI {mi:.3f} ({row['source']})"
        )
        cls = "reproduced" if row["reproduced"] else "self"
        parts.append(
            f'<circle class="{cls}" cx="{sx(mi):.1f}" cy="{sy(success):.1f}" r="6"><title>{label}</title></circle>'
        )
        name = _plain(row["meta"].get("model_name", ""))
        name = html.escape(name if len(name) <= 24 else name[:23] + "…")
        anchor, dx = ("end", -9) if sx(mi) > left + plot_w * 0.7 else ("start", 9)
        parts.append(
            f'<text class="label" x="{sx(mi) + dx:.1f}" y="{sy(success) + 4:.1f}" text-anchor="{anchor}">{name}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


# ---- the three outputs ------------------------------------------------------------------------------------
def render_html(rows: list[dict[str, Any]], suite: Suite, split: str, built: str) -> str:
    """The leaderboard page as HTML: the site template filled with the overall table, success per env, the
    success-vs-MI scatter and one table per env of ``suite``."""
    site = resources.files("leaderboard") / "site"
    template = (site / "index.html").read_text()
    content = ["<h2>Overall</h2>", _overall_table(rows, suite), "<h2>Success per env</h2>",
               '<p class="meta">Success rate and, under it, its standard error (percentage points).</p>',
               _success_by_env_table(rows, suite), "<h2>Success vs MI</h2>",
               '<p class="meta">Template collapse shows as high success claims with MI near zero: reasoning that no '
               "longer depends on the input. Dark dots are reproduced, light dots self-reported.</p>",
               scatter_svg(rows)]  # fmt: skip
    for env_id in suite.env_ids:
        content += [f"<h2>{html.escape(env_id)}</h2>", _env_table(rows, env_id)]
    label = (
        suite.label if split == "official" else f"{suite.label} hidden {suite.hidden.season if suite.hidden else ''}"
    )
    page = template.replace("/*STYLE*/", (site / "style.css").read_text())
    page = page.replace("/*SCRIPT*/", (site / "sort.js").read_text())
    page = page.replace("<!--SUITE-->", html.escape(label)).replace("<!--BUILT-->", html.escape(built))
    page = page.replace("<!--COUNT-->", str(len(rows)))
    return page.replace("<!--CONTENT-->", "\n".join(content))


_MD_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def _md(text: Any) -> str:
    """Submitter text as literal Markdown: every ASCII punctuation character backslash-escaped (CommonMark lets
    any be), so no link, image, autolink (``https\\://``, ``www\\.``), emphasis, HTML or table cell break
    can form; controls and bidi overrides as U+FFFD (:func:`_plain`)."""
    return _MD_PUNCTUATION.sub(r"\\\1", _plain(text))


def render_markdown(rows: list[dict[str, Any]], suite: Suite, split: str, built: str) -> str:
    """The leaderboard as Markdown (overall table, then one table per env of ``suite``), for a README or a review."""
    lines = ["# ragen-envs leaderboard", "",
             f"Suite `{suite.label}` ({split} split), built {built}. *Verified* means the episodes replay, not that "
             "this model produced them (a submitter may have kept the best of several samples per seed). MI and token "
             "entropy are self-reported unless marked *reproduced*: a maintainer re-ran the model on the split and its "
             "success agreed on every env.", "", "## Overall", ""]  # fmt: skip
    envs = [env_id.removeprefix("ragen/") for env_id in suite.env_ids]
    lines.append("| Rank | Model | Org | Params | Overall success | " + " | ".join(envs) + " | MI | Status | Date |")
    lines.append("|---:|---|---|---|---:|" + "---:|" * len(envs) + "---:|---|---|")
    for row in rows:
        meta = row["meta"]
        per_env = " | ".join(_pct(row["envs"][e].get("success_rate")) for e in suite.env_ids)
        lines.append(
            f"| {row['rank']} | {_md(meta.get('model_name', ''))} | {_md(meta.get('org', ''))} | "
            f"{_md(meta.get('parameters', ''))} | {_pct(row['overall']['success_rate'])} | {per_env} | "
            f"{_num(row['overall']['mi_estimate'])} | verified, {row['source']} | {_md(meta.get('date', ''))} |"
        )
    for env_id in suite.env_ids:
        lines += ["", f"## {env_id}", "", "| Rank | Model | Success | ± se | Mean return | Episodes | MI | Status |",
                  "|---:|---|---:|---:|---:|---:|---:|---|"]  # fmt: skip
        for rank, row in enumerate(_env_rank(rows, env_id), start=1):
            n = row["envs"][env_id]
            se = n.get("success_se")
            lines.append(
                f"| {rank} | {_md(row['meta'].get('model_name', ''))} | {_pct(n.get('success_rate'))} | "
                f"{'—' if se is None else f'{100 * se:.1f}'} | {_num(n.get('mean_return'))} | {n.get('episodes', 0)} | "
                f"{_num(n.get('mi_estimate'))} | verified, {row['source']} |"
            )
    if not rows:
        lines += ["", "_No verified submissions yet._"]
    return "\n".join(lines) + "\n"


CSV_COLUMNS = ("rank", "submission", "model_name", "org", "parameters", "weights", "date", "agent", "scope",
               "episodes", "success_rate", "success_se", "mean_return", "mean_turns", "mi_estimate",
               "retrieval_accuracy", "token_entropy", "collapse_source", "status", "report")  # fmt: skip


def _csv_safe(value: Any) -> Any:
    if isinstance(value, str):
        value = _plain(value)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value  # a spreadsheet would run it as a formula
    return "" if value is None else value


def render_csv(rows: list[dict[str, Any]], suite: Suite) -> str:
    """The leaderboard as CSV text with the columns :data:`CSV_COLUMNS`, one row per ranked submission."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        meta = row["meta"]
        base = {"rank": row["rank"], "submission": row["id"], "model_name": meta.get("model_name"), "org": meta.get("org"),
                "parameters": meta.get("parameters"), "weights": meta.get("weights"), "date": meta.get("date"),
                "agent": meta.get("agent"), "collapse_source": row["source"],
                "status": "verified+" + row["source"], "report": f"reports/{row['id']}.md" if row["has_report"] else ""}  # fmt: skip
        scopes = [
            ("overall", {**row["overall"], "episodes": sum(row["envs"][e].get("episodes", 0) for e in suite.env_ids)})
        ]
        scopes += [(env_id, row["envs"][env_id]) for env_id in suite.env_ids]
        for scope, numbers in scopes:
            record = {**base, "scope": scope, **{k: numbers.get(k) for k in CSV_COLUMNS if k in numbers}}
            writer.writerow({k: _csv_safe(record.get(k)) for k in CSV_COLUMNS})
    return buffer.getvalue()


def _report_page(title: str, text: str) -> str:
    from leaderboard.report_html import report_page

    return report_page(title, text)


def build(
    out: str | Path,
    store: str | Path = DEFAULT_STORE,
    *,
    suite: Suite = OFFICIAL,
    split: str = "official",
    now: str | None = None,
) -> dict[str, Path]:
    """Write LEADERBOARD.md, leaderboard.csv, index.html and reports/ into ``out``; return their paths."""
    check_split(split)
    out = Path(out)
    (out / "reports").mkdir(parents=True, exist_ok=True)
    entries = [e for e in load_entries(store) if e.get("suite") == suite.label and e.get("split") == split]
    rows = rows_for(entries, suite)
    built = now or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    paths = {"index": out / "index.html", "markdown": out / "LEADERBOARD.md", "csv": out / "leaderboard.csv"}
    paths["index"].write_text(render_html(rows, suite, split, built))
    paths["markdown"].write_text(render_markdown(rows, suite, split, built))
    paths["csv"].write_text(render_csv(rows, suite))
    for entry in entries:
        report = Path(entry["_folder"]) / "report.md"
        if report.is_file():
            text = report.read_text(errors="replace")
            (out / "reports" / f"{entry['id']}.md").write_text(text)
            title = _plain(f"{entry.get('metadata', {}).get('model_name', entry['id'])} — report")
            (out / "reports" / f"{entry['id']}.html").write_text(_report_page(title, text))
    return paths
