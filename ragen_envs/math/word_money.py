"""MathWord problem families about money: spending, wages, prices, savings, profit, interest, bills, fuel.

Each family is ``family(draw, work, steps) -> (text, answer)`` and performs exactly ``steps`` operations
through ``work`` (see :mod:`ragen_envs.math.word_kit`).
"""

from __future__ import annotations

from fractions import Fraction

from ragen_envs.math.word_kit import NAMES, Draw, Work, join_words, money, names, num, percent, ratio_text

GOODS = (
    ("notebook", "notebooks", 2, 6), ("sandwich", "sandwiches", 4, 9), ("movie ticket", "movie tickets", 8, 15),
    ("toy car", "toy cars", 3, 12), ("bag of rice", "bags of rice", 5, 14), ("potted plant", "potted plants", 6, 20),
    ("comic book", "comic books", 3, 9), ("box of pencils", "boxes of pencils", 2, 7), ("scarf", "scarves", 9, 25),
)  # fmt: skip
TREATS = ("lunch", "a bus pass", "a gift", "snacks", "a book", "stickers", "a haircut", "phone credit")
JOBS = ("babysitting", "mowing lawns", "tutoring", "walking dogs", "washing cars", "selling lemonade")


def wallet(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    name = d.pick(NAMES)
    cash = d.mult(150, 400, 10)
    parts = [f"{name} {d.pick(('has', 'starts the month with', 'has saved'))} {money(cash)}."]
    while w.count < steps:
        if steps - w.count >= 2 and d.chance(0.6):
            _, plural, low, high = d.pick(GOODS)
            count, price = d.int(2, 6), d.int(low, high)
            if count * price < cash:
                parts.append(f"{name} buys {count} {plural} at {money(price)} each.")
                cash = w.op(cash, "-", w.op(count, "*", price))
            else:
                parts.append(f"{name} works {count} hours {d.pick(JOBS)} at {money(price)} per hour.")
                cash = w.op(cash, "+", w.op(count, "*", price))
        elif cash > 30 and d.chance(0.6):
            spent = d.int(5, min(int(cash) - 1, 60))
            parts.append(f"{name} {d.pick(('spends', 'pays'))} {money(spent)} for {d.pick(TREATS)}.")
            cash = w.op(cash, "-", spent)
        else:
            earned = d.int(5, 60)
            parts.append(f"{name} {d.pick(('earns', 'is given', 'receives'))} {money(earned)}.")
            cash = w.op(cash, "+", earned)
    question = d.pick(("How much money does {} have now?", "How many dollars does {} have left?"))
    return " ".join([*parts, question.format(name)]), cash


def price_changes(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    item, plural, *_ = d.pick(GOODS)
    price = d.mult(40, 400, 20)
    shop = d.pick(("A shop", "An online store", "A market stall", "A department store"))
    parts = [f"{shop} sells a {item} for {money(price)}."]
    buy = steps >= 3 and d.chance(0.5)
    for _ in range(steps - buy):
        rate = Fraction(d.pick((5, 10, 15, 20, 25, 30, 40, 50)), 100)
        if d.chance(0.65):
            parts.append(
                d.pick(("The price is then cut by {}.", "Then it goes on sale at {} off.")).format(percent(rate))
            )
            price = w.op(price, "*", 1 - rate)
        else:
            parts.append(
                d.pick(("The price then rises by {}.", "Later the price goes up by {}.")).format(percent(rate))
            )
            price = w.op(price, "*", 1 + rate)
    if buy:
        count = d.int(2, 5)
        parts.append(f"How much do {count} {plural} cost at the final price, in dollars?")
        return " ".join(parts), w.op(price, "*", count)
    parts.append(f"What is the final price of the {item}, in dollars?")
    return " ".join(parts), price


def spending_fractions(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    name = d.pick(NAMES)
    spends = []
    remaining = steps
    while remaining:
        if remaining >= 2 and d.chance(0.7):
            spends.append(d.pick((Fraction(1, 2), Fraction(1, 3), Fraction(1, 4), Fraction(2, 5), Fraction(1, 5))))
            remaining -= 2
        else:
            spends.append(None)
            remaining -= 1
    scale = 1
    for share in spends:
        if share is not None:
            scale *= share.denominator
    cash = scale * d.int(3, 9) * (10 if scale < 20 else 1)
    fixed = [d.int(2, 9) for _ in spends]
    parts = [f"{name} has {money(cash)}."]
    for index, share in enumerate(spends):
        rest = "" if index == 0 else " of what is left"
        if share is None:
            amount = min(fixed[index], cash - 1)
            parts.append(f"{name} spends {money(amount)} on {d.pick(TREATS)}.")
            cash = w.op(cash, "-", amount)
        else:
            parts.append(f"{name} spends {ratio_text(share)}{rest} on {d.pick(TREATS)}.")
            cash = w.op(cash, "-", w.op(cash, "*", share))
    parts.append(f"How much money does {name} have left?")
    return " ".join(parts), cash


def wages(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    name, job = d.pick(NAMES), d.pick(JOBS)
    rate, hours, days = d.int(8, 25), d.int(2, 8), d.int(2, 6)
    parts = [f"{name} earns {money(rate)} an hour {job}, working {hours} hours a day for {days} days."]
    total = w.op(w.op(rate, "*", hours), "*", days)
    while w.count < steps:
        left = steps - w.count
        if left >= 3 and d.chance(0.4):
            extra = d.int(2, 6)
            parts.append(f"{name} also works {extra} hours of overtime, paid at one and a half times the hourly rate.")
            total = w.op(total, "+", w.op(w.op(rate, "*", Fraction(3, 2)), "*", extra))
        elif left >= 2 and d.chance(0.5):
            tips, times = d.int(3, 15), d.int(2, 5)
            parts.append(f"On {times} of the days {name} also gets {money(tips)} in tips.")
            total = w.op(total, "+", w.op(tips, "*", times))
        elif d.chance(0.5) or total <= 10:
            bonus = d.int(10, 50)
            parts.append(f"At the end {name} gets a bonus of {money(bonus)}.")
            total = w.op(total, "+", bonus)
        elif total > 10:
            cost = d.int(5, min(30, int(total) - 1))
            parts.append(f"{name} pays {money(cost)} for {d.pick(('the bus', 'supplies', 'a uniform'))}.")
            total = w.op(total, "-", cost)
    parts.append(f"How much does {name} take home in total, in dollars?")
    return " ".join(parts), total


def savings_goal(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    name = d.pick(NAMES)
    sources = d.int(max(1, steps - 4), min(4, steps - 1))
    items = steps - sources  # ops: (sources-1) sums + (items-1) sums + gap + division
    weekly = [d.int(3, 15) for _ in range(sources)]
    weeks = d.int(3, 20)
    rate = sum(weekly)
    have = d.int(5, 60)
    prices = [d.int(10, 60) for _ in range(items - 1)]
    prices.append(have + weeks * rate - sum(prices))
    if prices[-1] <= 0:
        prices[-1] += rate * 10
        weeks += 10
    goods = d.sample(("a bike helmet", "a skateboard", "a video game", "headphones", "a tent", "a watch"), items)
    sourced = join_words([f"{money(x)} a week from {j}" for x, j in zip(weekly, d.sample(JOBS, sources), strict=True)])
    parts = [
        f"{name} wants to buy {join_words([f'{g} for {money(p)}' for g, p in zip(goods, prices, strict=True)])}.",
        f"{name} already has {money(have)} and saves {sourced}.",
        f"How many weeks does {name} need to save to afford {'it' if items == 1 else 'all of them'}?",
    ]
    cost = prices[0]
    for price in prices[1:]:
        cost = w.op(cost, "+", price)
    saving = weekly[0]
    for amount in weekly[1:]:
        saving = w.op(saving, "+", amount)
    return " ".join(parts), w.op(w.op(cost, "-", have), "/", saving)


def profit(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    name, (_, plural, low, high) = d.pick(NAMES), d.pick(GOODS)
    count, cost = d.int(10, 60), d.int(low, high)
    if steps == 2:
        takings = count * cost + d.int(10, 90)
        text = f"{name} buys {count} {plural} at {money(cost)} each and sells them all for {money(takings)} in total. What is the profit, in dollars?"
        return text, w.op(takings, "-", w.op(count, "*", cost))
    price = cost + d.int(2, 8)
    extra = steps - 3
    discount = extra >= 3
    fees = extra - 3 if discount else extra
    parts = [f"{name} buys {count} {plural} at {money(cost)} each."]
    spent = w.op(count, "*", cost)
    if discount:
        sold = d.int(count // 2, count - 2)
        cheap = d.int(cost, price - 1)
        parts.append(f"{name} sells {sold} of them at {money(price)} each and the rest at {money(cheap)} each.")
        revenue = w.op(w.op(sold, "*", price), "+", w.op(w.op(count, "-", sold), "*", cheap))
    else:
        parts.append(f"{name} sells all of them at {money(price)} each.")
        revenue = w.op(count, "*", price)
    earned = w.op(revenue, "-", spent)
    for fee in d.sample(("a stall fee", "a delivery charge", "a card-payment fee"), fees):
        amount = d.int(1, min(15, int(earned) - 1))
        parts.append(f"{name} also pays {money(amount)} for {fee}.")
        earned = w.op(earned, "-", amount)
    parts.append(f"What is {name}'s profit, in dollars?")
    return " ".join(parts), earned


def simple_interest(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    name = d.pick(NAMES)
    principal, rate, years = d.mult(200, 5000, 100), Fraction(d.int(2, 8), 100), d.int(2, 6)
    parts = [f"{name} puts {money(principal)} in a savings account that pays {percent(rate)} simple interest per year."]
    interest = w.op(w.op(principal, "*", rate), "*", years)
    if steps == 2:
        parts.append(f"How much interest does it earn in {years} years, in dollars?")
        return " ".join(parts), interest
    balance = w.op(principal, "+", interest)
    parts.append(f"After {years} years {name} takes out the whole balance.")
    while w.count < steps:
        if w.count == steps - 1 and balance.denominator == 1 and d.chance(0.5):
            share = d.pick([n for n in (2, 3, 4, 5) if balance % n == 0] or [1])
            if share > 1:
                parts.append(f"{name} splits it equally among {share} {d.pick(('children', 'charities', 'cousins'))}.")
                parts.append("How much does each one get, in dollars?")
                return " ".join(parts), w.op(balance, "/", share)
        amount = d.int(10, max(10, min(150, int(balance) // (steps - w.count + 1))))
        parts.append(f"{name} {d.pick(('spends', 'donates', 'pays'))} {money(amount)} of it.")
        balance = w.op(balance, "-", amount)
    parts.append(f"How much of it does {name} have left, in dollars?")
    return " ".join(parts), balance


def restaurant_bill(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    group = names(d, d.int(2, 5))
    dishes = max(1, steps - 2) if steps > 2 else 1
    tip = Fraction(d.pick((10, 15, 20, 25)), 100)
    prices = [d.int(8, 40) for _ in range(dishes - 1)]
    step = 20 * len(group)  # a bill that is a multiple of this makes the tip and each share whole dollars
    bill_total = (int(sum(prices)) + 8 + step - 1) // step * step + step * d.int(0, 1)
    prices.append(bill_total - sum(prices))
    ordered = join_words(
        [f"{d.pick(('a dish', 'a meal', 'a pizza', 'a salad', 'a curry'))} for {money(p)}" for p in prices]
    )
    parts = [f"{join_words(group)} order {ordered} and add a {percent(tip)} tip."]
    bill = prices[0]
    for price in prices[1:]:
        bill = w.op(bill, "+", price)
    if steps == 2:
        parts.append("What is the total with the tip, in dollars?")
        return " ".join(parts), w.op(bill, "+", w.op(bill, "*", tip))
    total = w.op(bill, "+", w.op(bill, "*", tip))
    parts.append(f"They split the total equally among the {len(group)} of them. How much does each pay, in dollars?")
    return " ".join(parts), w.op(total, "/", len(group))


def fuel_cost(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    name = d.pick(NAMES)
    distance, use, price = d.mult(100, 600, 20), d.int(5, 12), Fraction(d.int(120, 220), 100)
    extras = d.sample(("detour", "round", "tank", "price", "toll", "split"), steps - 2)
    if "toll" in extras or "split" in extras:
        extras = list(dict.fromkeys([*extras, "price"]))[: steps - 2]
        if "price" not in extras:
            extras[-1] = "price"
    parts = [
        f"{name}'s car uses {use} liters of fuel per 100 km. {name} drives {distance} km to a {d.pick(('lake', 'festival', 'city', 'wedding'))}."
    ]
    km = distance
    if "detour" in extras:
        detour = d.mult(10, 80, 10)
        parts.append(f"On the way {name} makes a {detour} km detour.")
        km = w.op(km, "+", detour)
    if "round" in extras:
        parts.append(f"{name} then drives the same way back.")
        km = w.op(km, "*", 2)
    liters = w.op(w.op(km, "/", 100), "*", use)
    unit = "liters of fuel"
    if "tank" in extras:
        tank = d.int(1, 3)
        parts.append(f"The tank already holds {tank} liters, and {name} buys the rest.")
        liters = w.op(liters, "-", tank)
        unit = "liters of fuel must be bought"
    if "price" not in extras:
        parts.append(f"How many {unit}?" if "tank" in extras else "How many liters of fuel does the trip use?")
        return " ".join(parts), liters
    parts.append(f"Fuel costs {money(price)} per liter.")
    cost = w.op(liters, "*", price)
    if "toll" in extras:
        toll = d.int(3, 20)
        parts.append(f"There is also a {money(toll)} toll.")
        cost = w.op(cost, "+", toll)
    if "split" in extras:
        riders = d.int(2, 4)
        parts.append(f"{name} shares the cost equally with {riders - 1} friend{'s' if riders > 2 else ''}.")
        parts.append("How much does each person pay, in dollars?")
        return " ".join(parts), w.op(cost, "/", riders)
    parts.append("What is the cost of the trip, in dollars?")
    return " ".join(parts), cost


FAMILIES = {
    "wallet": wallet,
    "price_changes": price_changes,
    "spending_fractions": spending_fractions,
    "wages": wages,
    "savings_goal": savings_goal,
    "profit": profit,
    "simple_interest": simple_interest,
    "restaurant_bill": restaurant_bill,
    "fuel_cost": fuel_cost,
}
__all__ = ["FAMILIES", "num"]
