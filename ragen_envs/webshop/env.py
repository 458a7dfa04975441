"""WebShop-style online shopping (Yao et al. 2022) over a generated catalogue, in-process or as a real website.

## Description
Each episode is a shopping task: an instruction such as "i need a waterproof hiking jacket for men with
size: large, and color: navy, and price lower than 80.00 dollars" with a ground-truth product among
``tier`` generated products (``"1k"``, ``"10k"``, ``"100k"``; 30 categories; see
:mod:`ragen_envs.webshop.catalogue`). The agent searches (BM25), browses results (10 per page, up to 50),
opens items, picks options, reads the description/features tabs and buys. Pages, actions and reward follow
WebShop's text mode, so agents and prompts transfer.

## Action Space
One action per response (the whole answer): ``search[query]`` on the search page, or ``click[element]``
for one of the page's clickable elements (``back to search``, ``next >``, ``< prev``, a product's ASIN, an
option value, ``description``, ``features``, ``buy now``). Case-insensitive. An action the page does not
offer is invalid: it costs ``format_penalty`` and changes nothing.

## Observation Space
WebShop's simple text of the page (visible strings joined by ``" [SEP] "``), then a line
``Available actions: search[<your query>], click[...], ...`` listing what the page offers.

## Rewards
0 until the purchase; buying gives WebShop's reward in [0, 1]: the share of wanted attributes, options
and the price ceiling that the bought product meets, times a type-match factor
(:mod:`ragen_envs.webshop.reward`). Invalid responses cost ``format_penalty`` (−0.1).

## Episode End
Terminated at ``click[buy now]``; ``success`` is True when the purchase reward is exactly 1 (as RAGEN counts
WebShop success). Truncated after ``max_turns`` (15).

## Arguments
Both transports give identical observations and rewards for the same seed and responses.

## Version History
- v0: initial release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragen_envs.arguments import EnvConfig, argument
from ragen_envs.core import ActionResult, TextEnv
from ragen_envs.tools import ActionTool
from ragen_envs.webshop.catalogue import TIERS, Product, check_tier
from ragen_envs.webshop.oracle import next_action
from ragen_envs.webshop.pages import BACK_TO_SEARCH, PREV_PAGE, Page
from ragen_envs.webshop.search import MAX_QUERY_CHARS
from ragen_envs.webshop.shop import shop_for
from ragen_envs.webshop.tasks import Task, draw_task_id
from ragen_envs.webshop.transport import HttpTransport, InProcessTransport

TRANSPORTS = ("inprocess", "http")
_ACTION = re.compile(r"\s*(search|click)\s*\[(.*)\]\s*", re.IGNORECASE | re.DOTALL)
_QUERY_WORD = re.compile(r"[a-z0-9]+")


def canonical_query(raw: str) -> str:
    """The query as both transports send it: lowercase alphanumeric words (what the index can match)."""
    return " ".join(_QUERY_WORD.findall(raw[: MAX_QUERY_CHARS * 4].lower()))[:MAX_QUERY_CHARS].strip()


@dataclass(frozen=True)
class WebShopConfig(EnvConfig):
    """Which catalogue to shop in, and how the env reaches the shop."""

    tier: str = argument("1k", "Catalogue size: products in the shop.", choices=tuple(TIERS))
    transport: str = argument("inprocess", "``inprocess``, or ``http`` through the shop's website.", choices=TRANSPORTS)
    server_url: str | None = argument(
        None,
        'For ``transport="http"``: a running ``python -m ragen_envs.webshop.serve`` (``None`` starts a private '
        "server on loopback and stops it on ``close()``).",
        allowed="a URL",
    )

    def __post_init__(self) -> None:
        check_tier(self.tier)  # first, with its "did you mean"
        super().__post_init__()
        if self.server_url is not None and self.transport != "http":
            raise ValueError(f"server_url is only used with transport='http', got transport={self.transport!r}")


class WebShopEnv(TextEnv):  # noqa: D101 (its docstring is the module's, through __doc__ = __doc__)
    __doc__ = __doc__
    action_separator = None
    example_answer = "search[waterproof hiking jacket]"
    action_tools = (
        ActionTool("search", "Search the store (on a page with a search box).", "query", "The search words.", template="search[{}]"),
        ActionTool("click", "Click an element the page offers.", "element", "The element's text, e.g. buy now.", template="click[{}]"),
    )  # fmt: skip

    config_cls = WebShopConfig
    base_defaults = {"max_turns": 15}

    def _setup(self) -> None:
        self.shop = shop_for(self.config.tier)
        self._transport: InProcessTransport | HttpTransport | None = None
        self.task: Task | None = None
        self.page: Page | None = None
        self._product: Product | None = None  # the product whose pages we are on, from our own clicks

    # ---- transport ----------------------------------------------------------------------------------
    def _connect(self) -> InProcessTransport | HttpTransport:
        if self._transport is None:
            if self.config.transport == "http":
                self._transport = HttpTransport(self.config.tier, self.config.server_url)
            else:
                self._transport = InProcessTransport(self.shop)
        return self._transport

    def close(self) -> None:
        """Gymnasium's close: close the transport (and the shop server it started, if any)."""
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        super().close()

    def __getstate__(self) -> dict[str, Any]:
        if self.config.transport == "http" and self._transport is not None:
            raise TypeError("an env with transport='http' holds a live connection and cannot be pickled")
        return dict(self.__dict__)

    # ---- hooks --------------------------------------------------------------------------------------
    def _generate(self) -> None:
        task_id = draw_task_id(self.np_random)
        self.task = self.shop.task(task_id)
        self.page = self._connect().start(task_id)
        self._product = None

    def _instructions(self) -> str:
        return (
            "You are shopping in a web store for the product described by the instruction on the page.\n"
            "Pages are shown as text with elements separated by [SEP]. Actions:\n"
            "- search[your query] on the search page;\n"
            "- click[element] for a clickable element: a product id (e.g. click[b0abc12345]), an option value "
            "(e.g. click[large]), click[description], click[features], click[< prev], click[next >], "
            "click[back to search], click[buy now].\n"
            "Pick the options the instruction asks for before click[buy now]. Buying ends the episode: the reward "
            "(0 to 1) is how well the product, its options and its price match the instruction; 1 is a success.\n"
            "The observation ends with the actions available on the current page. Answer with exactly one action."
        )

    def _observe(self) -> str:
        actions = ", ".join(self._available_actions())
        return f"{self.page.text()}\nAvailable actions: {actions}" if actions else self.page.text()

    def _available_actions(self) -> list[str]:
        shown = ["search[<your query>]"] if self.page.has_search else []
        return shown + [f"click[{key}]" for key in self.page.clickables()]

    def _parse_action(self, text: str) -> tuple[str, str] | None:
        match = _ACTION.fullmatch(text)
        if match is None:
            return None
        verb, arg = match.group(1).lower(), match.group(2)
        if verb == "search":
            query = canonical_query(arg)
            return ("search", query) if self.page.has_search and query else None
        key = arg.strip().lower()
        return ("click", key) if key in self.page.clickables() else None

    def _apply(self, action: tuple[str, str]) -> ActionResult:
        verb, arg = action
        before = self.page
        if verb == "search":
            self.page = self._transport.search(arg)
        else:
            element = before.clickables()[arg]
            self.page = self._transport.click(arg)
            if element.kind == "product":
                self._product = self.shop.catalogue.by_asin(element.text)
            elif arg == BACK_TO_SEARCH.lower() or (arg == PREV_PAGE.lower() and before.kind == "item"):
                self._product = None
        if self.page.kind == "done":
            reward = float(self.page.reward)
            return ActionResult(reward=reward, effective=True, terminated=True, success=reward == 1.0)
        return ActionResult(reward=0.0, effective=self.page != before)

    def candidate_actions(self) -> tuple[str, ...]:
        """Every clickable on the page, and two searches for the task when the page has a search box."""
        if self.page is None or self.page.kind == "done":
            return ()
        found = [f"click[{key}]" for key in self.page.clickables()]
        if self.page.has_search:
            found += [f"search[{self.task.query}]", f"search[{self.task.query} {self.task.attributes[0]}]"]
        return tuple(found)

    def oracle(self) -> tuple[str, str]:
        """The scripted shopper's next step on this page (search, open a matching product, pick its options, buy)."""
        if self.page.kind == "done":
            return "The purchase is made.", "click[buy now]"
        return next_action(self.shop, self.task, self.page, self._product)

    def _reset_info(self) -> dict[str, Any]:
        return {"task_id": self.task.task_id, "page": self.page.kind}

    def _step_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"page": self.page.kind}
        if self.page.kind == "done":
            info["purchase_reward"] = float(self.page.reward)
        return info
