"""The scripted search-and-click policy behind ``WebShopEnv.oracle_response()``.

It reads only the current page, the task and what the env remembers of its own clicks (which product page
it is on), and it may consult the shop like a careful shopper who reads every item page:

- search page: search for the instruction's type and attributes; if no product that fully satisfies the
  task is among those results, just the type; failing that, the ground-truth product's title;
- results page: open the first listed product that fully satisfies the task, else the next page, else go
  back to search;
- item page: if the product satisfies the task, click each wanted option not yet selected, then buy;
  otherwise go back;
- description/features pages: go back.
"""

from __future__ import annotations

from ragen_envs.webshop.catalogue import Product
from ragen_envs.webshop.pages import BACK_TO_SEARCH, BUY_NOW, NEXT_PAGE, PREV_PAGE, Page
from ragen_envs.webshop.reward import purchase_reward
from ragen_envs.webshop.shop import Shop
from ragen_envs.webshop.tasks import Task


def best_options(product: Product, task: Task) -> dict[str, str]:
    """The wanted value of each of the product's option groups that offers it."""
    offered = product.option_dict
    return {group: value for group, value in task.options if value in offered.get(group, ())}


def satisfies(product: Product, task: Task) -> bool:
    """Would buying ``product`` with the best options earn reward 1?"""
    return purchase_reward(product, task, best_options(product, task)).success


def candidate_queries(task: Task) -> list[str]:
    """The queries the oracle tries, in order: task query with its attributes, the query alone, the product title."""
    return [" ".join((task.query, *task.attributes)), task.query, task.product.title.lower()]


def choose_query(shop: Shop, task: Task) -> str:
    """The first candidate query whose results hold a product that satisfies the task."""
    queries = candidate_queries(task)
    for query in queries:
        if any(satisfies(shop.catalogue[i], task) for i in shop.search(query)):
            return query
    return queries[-1]


def next_action(shop: Shop, task: Task, page: Page, product: Product | None) -> tuple[str, str]:
    """(reasoning, action) for the current page; ``product`` is the item page's product, if any."""
    if page.kind == "search":
        query = choose_query(shop, task)
        return f"I search for what the instruction asks: {query}.", f"search[{query}]"
    if page.kind == "results":
        for asin in page.products():
            listed = shop.catalogue.by_asin(asin)
            if listed is not None and satisfies(listed, task):
                return f"{asin} matches the type, attributes and price, so I open it.", f"click[{asin.lower()}]"
        keys = page.clickables()
        if NEXT_PAGE.lower() in keys:
            return "Nothing on this page fits; I look at the next page.", f"click[{NEXT_PAGE.lower()}]"
        return "Nothing here fits; I search again.", f"click[{BACK_TO_SEARCH.lower()}]"
    if page.kind == "item" and product is not None:
        if not satisfies(product, task):
            return "This item does not fit the instruction; I go back.", f"click[{PREV_PAGE.lower()}]"
        selected = {e.group: e.text for e in page.elements if e.kind == "option" and e.selected}
        for group, value in best_options(product, task).items():
            if selected.get(group) != value:
                return f"The instruction wants {group}: {value}.", f"click[{value}]"
        return (
            "The item and its options match, and the price is under the limit; I buy it.",
            f"click[{BUY_NOW.lower()}]",
        )
    if PREV_PAGE.lower() in page.clickables():
        return "I return to the item.", f"click[{PREV_PAGE.lower()}]"
    return "I start over from the search page.", f"click[{BACK_TO_SEARCH.lower()}]"
