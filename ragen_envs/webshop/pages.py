"""One page model, rendered to WebShop's text and to HTML, and parsed back from that HTML.

A :class:`Page` is a list of :class:`Element` s in reading order. Its text is WebShop's "simple" text
mode: the visible strings joined by ``" [SEP] "``. Its HTML gives every element a tag whose class says its
kind; links and the search form carry the page ``version`` so a reloaded or stale link cannot replay an
action. :func:`parse_html` turns such HTML back into the identical ``Page`` (plus the hrefs a client
follows), which is how the HTTP transport sees the site.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import quote

SEP = " [SEP] "
PAGE_KINDS = ("search", "results", "item", "description", "features", "done")
ELEMENT_KINDS = ("text", "button", "product", "option", "search")

BACK_TO_SEARCH, NEXT_PAGE, PREV_PAGE = "Back to Search", "Next >", "< Prev"
DESCRIPTION, FEATURES, BUY_NOW = "Description", "Features", "Buy Now"


@dataclass(frozen=True)
class Element:
    """One visible string of a page; clickable when ``key`` is set (``click[key]``)."""

    kind: str
    text: str
    key: str = ""
    group: str = ""
    """The option group of an ``option`` element."""
    selected: bool = False


@dataclass(frozen=True)
class Page:
    """One shop page: its kind, its elements in display order, its version, and the reward on the ``done`` page."""

    kind: str
    elements: tuple[Element, ...]
    version: int = 0
    """How many state-changing actions led here; links carry it so stale ones are refused."""
    reward: float | None = None
    """Set on the ``done`` page only."""

    @property
    def has_search(self) -> bool:
        """Whether the page has a search box."""
        return any(e.kind == "search" for e in self.elements)

    def text(self) -> str:
        """WebShop's simple text observation of this page."""
        return SEP.join(e.text for e in self.elements)

    def clickables(self) -> dict[str, Element]:
        """Clickable elements by their (lowercase) key, in page order."""
        return {e.key: e for e in self.elements if e.key}

    def products(self) -> list[str]:
        """ASINs (uppercase) listed on a results page, in order."""
        return [e.text for e in self.elements if e.kind == "product"]

    def option_groups(self) -> dict[str, list[Element]]:
        """The page's option elements by option group, in display order."""
        groups: dict[str, list[Element]] = {}
        for e in self.elements:
            if e.kind == "option":
                groups.setdefault(e.group, []).append(e)
        return groups


def text(s: str) -> Element:
    """A plain text element."""
    return Element("text", s)


def button(label: str) -> Element:
    """A button element, clicked by its lowercased label."""
    return Element("button", label, key=label.lower())


# ---- HTML -------------------------------------------------------------------------------------------------
_STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#222}
.ws-text{margin:.3rem 0}.ws-instruction{background:#f3f6fa;padding:.5rem;border-radius:4px}
a.ws-button,a.ws-option,a.ws-product{display:inline-block;margin:.2rem;padding:.25rem .6rem;border:1px solid #888;
border-radius:4px;text-decoration:none;color:#124}a.ws-product{font-weight:bold}
a.ws-option.selected{background:#124;color:#fff}form.ws-search input{width:30rem;padding:.3rem}"""
STATIC_FILES = {"/static/style.css": ("text/css; charset=utf-8", _STYLE.encode())}


def render_html(page: Page, base: str) -> str:
    """The page as an HTML document whose links and form act on the session at ``base`` (e.g. ``/s/<id>``)."""
    v = page.version
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>WebShop</title>',
        '<link rel="stylesheet" href="/static/style.css">',
    ]
    if page.reward is not None:
        out.append(f'<meta name="ws-reward" content="{page.reward!r}">')
    out.append(f'</head><body><main class="ws-page" data-page="{page.kind}" data-version="{v}">')
    for e in page.elements:
        label = html.escape(e.text)
        if e.kind == "text":
            out.append(f'<p class="ws-text">{label}</p>')
        elif e.kind == "search":
            out.append(
                f'<form class="ws-search" action="{base}/search" method="get">'
                f'<input id="search_input" name="q" type="text" maxlength="500" autofocus>'
                f'<input type="hidden" name="v" value="{v}"><button type="submit" class="ws-submit">{label}</button>'
                f"</form>"
            )
        else:
            href = f"{base}/click?el={quote(e.key, safe='')}&amp;v={v}"
            key = html.escape(e.key, quote=True)
            extra = ""
            if e.kind == "option":
                extra = f' data-group="{html.escape(e.group, quote=True)}" aria-pressed="{str(e.selected).lower()}"'
            css = (
                f"ws-{e.kind}" + (" product-link" if e.kind == "product" else "") + (" selected" if e.selected else "")
            )
            out.append(f'<a class="{css}" data-key="{key}"{extra} href="{href}">{label}</a>')
    out.append("</main></body></html>")
    return "\n".join(out)


@dataclass
class ParsedPage:
    """What a client reads from a page's HTML: the page, and where its links and form go."""

    page: Page
    links: dict[str, str] = field(default_factory=dict)
    search_action: str | None = None


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.kind = ""
        self.version = 0
        self.reward: float | None = None
        self.elements: list[Element] = []
        self.links: dict[str, str] = {}
        self.search_action: str | None = None
        self._open: dict | None = None  # the element whose text we are collecting

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        css = (a.get("class") or "").split()
        if tag == "meta" and a.get("name") == "ws-reward":
            self.reward = float(a.get("content") or "nan")
        elif tag == "main" and "ws-page" in css:
            self.kind = a.get("data-page", "")
            self.version = int(a.get("data-version", "0"))
        elif tag == "form" and "ws-search" in css:
            self.search_action = a.get("action")
        elif tag == "p" and "ws-text" in css:
            self._open = {"kind": "text", "parts": []}
        elif tag == "button" and "ws-submit" in css:
            self._open = {"kind": "search", "parts": []}
        elif tag == "a" and css and css[0] in ("ws-button", "ws-product", "ws-option"):
            key = a.get("data-key", "")
            self.links[key] = a.get("href", "")
            self._open = {
                "kind": css[0][3:],
                "parts": [],
                "key": key,
                "group": a.get("data-group", ""),
                "selected": "selected" in css,
            }

    def handle_data(self, data):
        if self._open is not None:
            self._open["parts"].append(data)

    def handle_endtag(self, tag):
        if self._open is not None and tag in ("p", "a", "button"):
            o = self._open
            self.elements.append(
                Element(o["kind"], "".join(o["parts"]), o.get("key", ""), o.get("group", ""), o.get("selected", False))
            )
            self._open = None


def parse_html(document: str) -> ParsedPage:
    """Read a page rendered by :func:`render_html` back into a :class:`Page` and its links."""
    parser = _PageParser()
    parser.feed(document)
    parser.close()
    if parser.kind not in PAGE_KINDS:
        raise ValueError(f"not a WebShop page (page kind {parser.kind!r})")
    page = Page(parser.kind, tuple(parser.elements), parser.version, parser.reward)
    return ParsedPage(page, parser.links, parser.search_action)
