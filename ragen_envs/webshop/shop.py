"""The shop's rules: one episode's state, how ``search``/``click`` change it, and the page it shows.

Both transports run exactly this code: the in-process env calls it directly, the HTTP server calls it per
request. Navigation follows WebShop's ``web_agent_text_env``: search page → results (10 per page, 50
results, next/prev) → item page (options, description/features tabs, buy) → done page with the reward.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from ragen_envs.webshop.catalogue import Catalogue, Product, check_tier
from ragen_envs.webshop.pages import (
    BACK_TO_SEARCH,
    BUY_NOW,
    DESCRIPTION,
    FEATURES,
    NEXT_PAGE,
    PREV_PAGE,
    Element,
    Page,
    button,
    text,
)
from ragen_envs.webshop.reward import RewardBreakdown, purchase_reward
from ragen_envs.webshop.search import SearchIndex, search_index
from ragen_envs.webshop.tasks import Task, make_task

RESULTS_PER_PAGE = 10
_SEARCH_CACHE = 4096


class Shop:
    """A tier's catalogue and search index, shared by every episode in the process."""

    def __init__(self, tier: str) -> None:
        check_tier(tier)
        self.tier = tier
        self.catalogue = Catalogue(tier)
        self._cache: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def index(self) -> SearchIndex:
        """The tier's search index, opened (or built) on first use: a reset does not need it."""
        return search_index(self.tier)

    def task(self, task_id: int) -> Task:
        """Task ``task_id`` of this shop's tier."""
        return _task(self.tier, task_id)

    def search(self, query: str) -> tuple[int, ...]:
        """Product indexes for a query (memoized: agents repeat queries a lot)."""
        with self._lock:
            hit = self._cache.get(query)
            if hit is not None:
                self._cache.move_to_end(query)
                return hit
        result = tuple(self.index.search(query))
        with self._lock:
            self._cache[query] = result
            if len(self._cache) > _SEARCH_CACHE:
                self._cache.popitem(last=False)
        return result

    def __reduce__(self):
        return (shop_for, (self.tier,))


@functools.lru_cache(maxsize=1024)
def _task(tier: str, task_id: int) -> Task:
    return make_task(Catalogue(tier), task_id)  # memoized: the env and its transport both ask for it


_SHOPS: dict[str, Shop] = {}
_SHOPS_LOCK = threading.Lock()


def shop_for(tier: str) -> Shop:
    """The process-wide :class:`Shop` of ``tier``."""
    with _SHOPS_LOCK:
        if tier not in _SHOPS:
            _SHOPS[tier] = Shop(tier)
        return _SHOPS[tier]


@dataclass
class ShopState:
    """Where one episode is: the page shown and what led there."""

    task: Task
    page: str = "search"
    query: str = ""
    results: tuple[int, ...] = ()
    page_no: int = 1
    product: Product | None = None
    options: dict[str, str] = field(default_factory=dict)
    version: int = 0
    outcome: RewardBreakdown | None = None

    @property
    def done(self) -> bool:
        """Whether the episode is over (the purchase page was reached)."""
        return self.page == "done"


@dataclass(frozen=True)
class Outcome:
    """What one action did: whether the page changed, and the purchase reward when it ended the episode."""

    effective: bool
    reward: RewardBreakdown | None = None


def new_state(shop: Shop, task_id: int) -> ShopState:
    """A fresh session state on the search page for task ``task_id``."""
    return ShopState(task=shop.task(task_id))


def search(shop: Shop, state: ShopState, query: str) -> Outcome:
    """``search[query]`` (only on the search page)."""
    if state.page != "search":
        return Outcome(False)
    state.query = query
    state.results = shop.search(query)
    state.page, state.page_no, state.product, state.options = "results", 1, None, {}
    state.version += 1
    return Outcome(True)


def click(shop: Shop, state: ShopState, key: str) -> Outcome:
    """``click[key]`` for a key among the current page's clickables (see :func:`build_page`)."""
    key = key.lower()
    clickables = build_page(shop, state).clickables()
    if key not in clickables:
        return Outcome(False)
    element = clickables[key]
    reward = None
    if key == BACK_TO_SEARCH.lower():
        state.page, state.query, state.results, state.product, state.options = "search", "", (), None, {}
    elif key == NEXT_PAGE.lower():
        state.page_no += 1
    elif key == PREV_PAGE.lower():
        if state.page == "results":
            state.page_no -= 1
        elif state.page == "item":
            state.page, state.product, state.options = "results", None, {}
        else:
            state.page = "item"
    elif element.kind == "product":
        state.page, state.product, state.options = "item", shop.catalogue.by_asin(element.text), {}
    elif element.kind == "option":
        if state.options.get(element.group) == element.text:
            return Outcome(False)
        state.options[element.group] = element.text
    elif key == DESCRIPTION.lower():
        state.page = "description"
    elif key == FEATURES.lower():
        state.page = "features"
    elif key == BUY_NOW.lower():
        state.outcome = reward = purchase_reward(state.product, state.task, dict(state.options))
        state.page = "done"
    state.version += 1
    return Outcome(True, reward)


def _price(value: float) -> str:
    return f"${value:.2f}"


def build_page(shop: Shop, state: ShopState) -> Page:
    """The page the state shows (WebShop's element order)."""
    instruction = [text("Instruction:"), text(state.task.instruction)]
    els: list[Element]
    if state.page == "search":
        els = [text("WebShop"), *instruction, Element("search", "Search")]
    elif state.page == "results":
        total = len(state.results)
        els = [*instruction, button(BACK_TO_SEARCH), text(f"Page {state.page_no} (Total results: {total})")]
        if state.page_no > 1:
            els.append(button(PREV_PAGE))
        if state.page_no * RESULTS_PER_PAGE < total:
            els.append(button(NEXT_PAGE))
        start = (state.page_no - 1) * RESULTS_PER_PAGE
        for index in state.results[start : start + RESULTS_PER_PAGE]:
            product = shop.catalogue[index]
            els += [Element("product", product.asin, key=product.asin.lower()), text(product.title)]
            els.append(text(_price(product.price)))
    elif state.page == "item":
        p = state.product
        els = [*instruction, button(BACK_TO_SEARCH), button(PREV_PAGE)]
        for group, values in p.options:
            els.append(text(group))
            chosen = state.options.get(group)
            els += [Element("option", v, key=v, group=group, selected=v == chosen) for v in values]
        if state.options:
            picked = ", ".join(f"{group}: {value}" for group, value in state.options.items())
            els.append(text(f"You have clicked {picked}."))
        els += [text(p.title), text(f"Price: {_price(p.price)}"), text(f"Rating: {p.rating}")]
        els += [button(DESCRIPTION), button(FEATURES), button(BUY_NOW)]
    elif state.page in ("description", "features"):
        p = state.product
        body = [p.description] if state.page == "description" else list(p.bullets)
        els = [*instruction, button(BACK_TO_SEARCH), button(PREV_PAGE), *map(text, body)]
    else:  # done
        p, outcome = state.product, state.outcome
        picked = ", ".join(f"{group}: {value}" for group, value in state.options.items()) or "none"
        els = [
            text("Thank you for shopping with us!"),
            text("Purchased"),
            text(f"{p.asin}: {p.title}"),
            text(f"Options: {picked}"),
            text("Your score (min 0.0, max 1.0)"),
            text(f"{outcome.reward:.4f}"),
        ]
        return Page("done", tuple(els), state.version, outcome.reward)
    return Page(state.page, tuple(els), state.version)
