"""A submission's report.md as an HTML page of the site, safe for text that comes from outside.

Rendered with Python-Markdown (tables and fenced code) with its raw-HTML handling removed, so any ``<tag>`` in
a report is shown as text, never parsed; links keep only relative and http(s) targets, and images (the run's
plots, which the site does not carry) become their alt text. The page keeps the site's strict Content Security
Policy (nothing loads, nothing runs), which would stop what escaping missed.
"""

from __future__ import annotations

import html
import re

CSP = "default-src 'none'; style-src 'unsafe-inline'"
_SAFE_HREF = re.compile(r"^(https?://|#|[A-Za-z0-9_./-]+$)")


def markdown_to_html(text: str) -> str:
    """The body HTML of a report (``markdown`` from the ``report`` extra)."""
    try:
        import markdown
        from markdown.extensions import Extension
        from markdown.treeprocessors import Treeprocessor
    except ImportError:  # the page still shows the report, as escaped text
        return f"<pre>{html.escape(text)}</pre>"

    class _Neutralize(Treeprocessor):
        def run(self, root):
            for parent in root.iter():
                for index, element in enumerate(list(parent)):
                    if element.tag == "img":  # plots are not on the site; say which one was meant
                        span = element.makeelement("span", {"class": "plot"})
                        span.text = f"[plot: {element.get('alt') or element.get('src') or ''}]"
                        span.tail = element.tail
                        parent.remove(element)
                        parent.insert(index, span)
                    elif element.tag == "a" and not _SAFE_HREF.match(element.get("href", "")):
                        element.attrib.pop("href", None)
            return None

    class _SafeReport(Extension):
        def extendMarkdown(self, md):  # noqa: N802 (Python-Markdown's hook name)
            md.preprocessors.deregister("html_block")  # raw HTML blocks and inline tags become text
            md.inlinePatterns.deregister("html")
            md.treeprocessors.register(_Neutralize(md), "neutralize", 0)

    return markdown.markdown(text, extensions=["tables", "fenced_code", _SafeReport()], output_format="html")


def report_page(title: str, text: str) -> str:
    """The whole page: the title (escaped), a link back, and the rendered report."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>{html.escape(title)}</title><style>body{{font:15px system-ui,sans-serif;max-width:1100px;margin:auto;"
        "padding:1rem}table{border-collapse:collapse;font-size:13px;display:block;overflow-x:auto}"
        "th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child,td:nth-child(2){text-align:left}"
        "code{background:#f3f3f3}pre{white-space:pre-wrap}.plot{color:#666}</style></head><body>"
        f'<p><a href="../index.html">← leaderboard</a></p><h1>{html.escape(title)}</h1>'
        f"{markdown_to_html(text)}</body></html>\n"
    )
