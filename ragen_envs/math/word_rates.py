"""MathWord problem families about rates and measures: trips, unit conversion, recipes, mixtures,
schedules, working together, meeting trains, fencing, painting, reading plans.

Each family is ``family(draw, work, steps) -> (text, answer)`` and performs exactly ``steps`` operations
through ``work`` (see :mod:`ragen_envs.math.word_kit`).
"""

from __future__ import annotations

from fractions import Fraction

from ragen_envs.math.word_kit import NAMES, Draw, Work, join_words, names, num, percent


def trip_legs(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (trip_legs): trip legs, some given by speed and time; asks the total distance; exactly ``steps``
    operations through ``w``. Returns (question text, exact answer)."""
    name = d.pick(NAMES)
    timed = d.int(1, (steps + 1) // 2)
    plain = steps + 1 - 2 * timed
    legs = [
        ("timed", d.pick(("drives", "cycles", "rides a train", "sails")), d.int(10, 90), d.int(1, 4))
        for _ in range(timed)
    ]
    legs += [("plain", d.pick(("walks", "runs", "hikes", "takes a ferry")), d.int(2, 30), 0) for _ in range(plain)]
    order = d.sample(range(len(legs)), len(legs))
    parts, total = [], None
    for position, index in enumerate(order):
        kind, verb, value, hours = legs[index]
        first = "First" if position == 0 else d.pick(("Then", "After that", "Next"))
        if kind == "timed":
            parts.append(f"{first} {name} {verb} for {hours} hour{'s' if hours > 1 else ''} at {value} km per hour.")
            distance = w.op(value, "*", hours)
        else:
            parts.append(f"{first} {name} {verb} {value} km.")
            distance = value
        total = distance if total is None else w.op(total, "+", distance)
    return " ".join([*parts, f"How many kilometers does {name} travel in all?"]), total


_LADDERS = (
    (
        (("weeks", 7), ("days", 24), ("hours", 60), ("minutes", 60), ("seconds", 1)),
        (
            "A film festival lasts {}.",
            "A road trip takes {}.",
            "A charity marathon lasts {}.",
            "A science camp runs for {}.",
        ),
    ),
    (
        (("kilometers", 1000), ("meters", 100), ("centimeters", 10), ("millimeters", 1)),
        ("A hiking trail is {} long.", "A cable is {} long.", "A canal runs for {}.", "A race course measures {}."),
    ),
    (
        (("tonnes", 1000), ("kilograms", 1000), ("grams", 1000), ("milligrams", 1)),
        ("A shipment of sand weighs {}.", "A truck carries {} of apples.", "A statue weighs {}."),
    ),
)


def unit_conversion(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    # Converting down k levels costs k multiplications plus one addition per extra amount given.
    """Problem family (unit_conversion): amounts in larger units converted down a unit ladder; exactly ``steps``
    operations through ``w``. Returns (question text, exact answer)."""
    usable = [ladder for ladder in _LADDERS if 2 * (len(ladder[0]) - 1) >= steps]
    units, templates = d.pick(usable)
    depth = len(units) - 1
    levels = d.int((steps + 1) // 2, min(depth, steps))
    extras = steps - levels
    start = d.int(0, depth - levels)
    end = start + levels
    with_parts = sorted(d.sample(range(start + 1, end + 1), extras))
    amounts = {start: d.int(1, 9), **{level: d.int(1, units[level - 1][1] - 1) for level in with_parts}}
    given = join_words([f"{amounts[level]} {units[level][0]}" for level in sorted(amounts)])
    if amounts[start] == 1:
        given = given.replace(f"1 {units[start][0]}", f"1 {units[start][0][:-1]}", 1)
    value = amounts[start]
    for level in range(start, end):
        value = w.op(value, "*", units[level][1])
        if level + 1 in amounts:
            value = w.op(value, "+", amounts[level + 1])
    return f"{d.pick(templates).format(given)} How many {units[end][0]} is that?", value


INGREDIENTS = ("flour", "sugar", "milk", "oats", "rice", "yogurt", "cocoa", "butter")


def recipe_scaling(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (recipe_scaling): ingredient amounts scaled to another number of servings or guests; exactly
    ``steps`` operations through ``w``. Returns (question text, exact answer)."""
    guests = steps % 2 == 1
    count = (steps - 1) // 2 if guests else steps // 2
    items = d.sample(INGREDIENTS, max(count, 1))
    serves = d.pick((2, 4, 6, 8))
    amounts = [Fraction(d.int(1, 8), d.pick((1, 2, 4))) for _ in items]
    dish = d.pick(("pancakes", "a cake", "porridge", "cookies", "a pie"))
    listed = join_words([f"{num(a)} cups of {i}" for a, i in zip(amounts, items, strict=True)])
    parts = [f"A recipe for {dish} that serves {serves} uses {listed}."]
    if guests:
        people, each = d.int(2, 12), d.int(1, 3)
        parts.append(
            f"{d.pick(NAMES)} is cooking for {people} people who will each eat {each} serving{'s' if each > 1 else ''}."
        )
        servings = w.op(people, "*", each)
    else:
        servings = d.int(1, 6) * serves // 2 + serves
        parts.append(f"{d.pick(NAMES)} wants to make {num(servings)} servings.")
    factor = w.op(servings, "/", serves)
    total = None
    for amount in amounts[: max(count, 1)]:
        scaled = w.op(amount, "*", factor)
        total = scaled if total is None else w.op(total, "+", scaled)
    what = f"of {items[0]}" if len(items) == 1 else "of these ingredients in total"
    return " ".join([*parts, f"How many cups {what} are needed?"]), total


def mixtures(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (mixtures): solutions of given percentages mixed; asks the liters of the pure liquid; exactly
    ``steps`` operations through ``w``. Returns (question text, exact answer)."""
    add_pure = steps % 2 == 0
    count = (steps + 1) // 2 if not add_pure else steps // 2
    liquid = d.pick(("juice", "alcohol", "salt", "vinegar", "syrup"))
    batches = [(d.int(1, 12), Fraction(d.pick((5, 10, 20, 25, 40, 50, 60, 75, 80)), 100)) for _ in range(count)]
    described = join_words([f"{v} liters of a {percent(p)} {liquid} solution" for v, p in batches])
    parts = [f"{d.pick(NAMES)} mixes {described}."]
    total = None
    for volume, share in batches:
        pure = w.op(volume, "*", share)
        total = pure if total is None else w.op(total, "+", pure)
    if add_pure:
        extra = d.int(1, 4)
        parts.append(
            f"Then {extra} liter{'s' if extra > 1 else ''} of pure {liquid} {'are' if extra > 1 else 'is'} added."
        )
        total = w.op(total, "+", extra)
    return " ".join([*parts, f"How many liters of pure {liquid} does the mixture contain?"]), total


CHORES = ("cleaning the kitchen", "doing homework", "practicing piano", "cooking dinner", "reading", "gardening")


def task_time(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (task_time): tasks in minutes and hours; asks the total minutes; exactly ``steps`` operations
    through ``w``. Returns (question text, exact answer)."""
    name = d.pick(NAMES)
    tasks, ops = [], -1  # n tasks need n-1 additions
    while ops < steps:
        left = steps - ops
        kind = (
            d.pick(("minutes", "hours", "both", "repeat"))
            if left >= 3
            else ("minutes" if left == 1 else d.pick(("hours", "repeat")))
        )
        tasks.append(kind)
        ops += {"minutes": 1, "hours": 2, "both": 3, "repeat": 2}[kind]
    if ops > steps:  # only possible when the first task was not plain minutes
        tasks[0] = "minutes"
    parts, total = [], None
    for kind, chore in zip(
        tasks,
        d.sample(CHORES, len(tasks)) if len(tasks) <= len(CHORES) else [d.pick(CHORES) for _ in tasks],
        strict=True,
    ):
        if kind == "minutes":
            minutes = d.int(5, 55)
            parts.append(f"{minutes} minutes {chore}")
            spent = minutes
        elif kind == "hours":
            hours = d.int(1, 3)
            parts.append(f"{hours} hour{'s' if hours > 1 else ''} {chore}")
            spent = w.op(hours, "*", 60)
        elif kind == "both":
            hours, minutes = d.int(1, 2), d.int(5, 55)
            parts.append(f"{hours} hour{'s' if hours > 1 else ''} and {minutes} minutes {chore}")
            spent = w.op(w.op(hours, "*", 60), "+", minutes)
        else:
            times, minutes = d.int(2, 4), d.int(10, 25)
            parts.append(f"{times} sessions of {minutes} minutes each {chore}")
            spent = w.op(times, "*", minutes)
        total = spent if total is None else w.op(total, "+", spent)
    return f"On Saturday {name} spends {join_words(parts)}. How many minutes is that in total?", total


def work_together(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (work_together): workers with their own times for one job; asks the joint rate or time; exactly
    ``steps`` operations through ``w``. Returns (question text, exact answer)."""
    invert = steps % 2 == 0 and steps >= 4  # the time for the whole job together
    count = steps // 2 if invert else max(1, (steps - 1) // 2)
    workers = names(d, count)
    hours = [d.int(2, 12) for _ in workers]
    job = d.pick(("paint a fence", "fill a pool", "pick an orchard", "sort a library", "clear a field"))
    if count > 1:
        alone = join_words([f"{who} in {h} hours" for who, h in zip(workers, hours, strict=True)])
        parts = [f"Working alone, {alone} can {job}."]
    else:
        parts = [f"{workers[0]} can {job} alone in {hours[0]} hours."]
    rate = None
    for h in hours:
        part = w.op(1, "/", h)
        rate = part if rate is None else w.op(rate, "+", part)
    if invert:
        parts.append("If they all work together, how many hours does the whole job take?")
        return " ".join(parts), w.op(1, "/", rate)
    spent = Fraction(d.int(1, 3))
    while rate * spent >= 1:
        spent /= 2
    who = "they work together" if count > 1 else f"{workers[0]} works"
    hours_text = f"{num(spent)} hour{'' if spent == 1 else 's'}"
    if steps == 2:
        parts.append(f"If {who} for {hours_text}, what fraction of the job is done?")
        return " ".join(parts), w.op(rate, "*", spent)
    parts.append(f"If {who} for {hours_text}, what fraction of the job is still left?")
    return " ".join(parts), w.op(1, "-", w.op(rate, "*", spent))


def trains(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    # extra steps beyond gap ÷ closing speed: sections (+1 or +2), relative speed (+1), minutes (+1), delay (+2)
    """Problem family (trains): two trains closing a gap; asks when they meet; exactly ``steps`` operations through
    ``w``. Returns (question text, exact answer)."""
    plans = [
        (sections, relative, minutes, delay)
        for sections in (0, 1, 2)
        for relative in (0, 1)
        for minutes in (0, 1)
        for delay in (0, 2)
        if sections + relative + minutes + delay == steps - 2
    ]
    sections, relative, minutes, delay = d.pick(plans)
    chosen = {
        "segments": sections == 1,
        "segments3": sections == 2,
        "relative": relative,
        "minutes": minutes,
        "delay": delay,
    }
    chosen = [key for key, on in chosen.items() if on]
    a, b = d.sample(("Ashford", "Brill", "Corby", "Dunmore", "Elgin", "Fenwick"), 2)
    v1, v2 = d.mult(40, 120, 10), d.mult(40, 120, 10)
    parts = []
    if "segments" in chosen or "segments3" in chosen:
        pieces = [d.mult(100, 300, 10) for _ in range(3 if "segments3" in chosen else 2)]
        parts.append(
            f"The railway from {a} to {b} runs through {len(pieces) - 1} station{'s' if len(pieces) > 2 else ''}, with sections of {join_words([f'{p} km' for p in pieces])}."
        )
        gap = pieces[0]
        for piece in pieces[1:]:
            gap = w.op(gap, "+", piece)
    else:
        gap = d.mult(200, 900, 10)
        parts.append(f"{a} and {b} are {num(gap)} km apart by rail.")
    parts.append(f"A train leaves {a} for {b} at {v1} km/h.")
    if "relative" in chosen:
        faster = d.mult(10, 40, 10)
        parts.append(f"A second train leaves {b} for {a}, {faster} km/h faster than the first.")
        v2 = w.op(v1, "+", faster)
    else:
        parts.append(f"A second train leaves {b} for {a} at {num(v2)} km/h.")
    if "delay" in chosen:
        head = 1 if v1 * 2 >= gap else d.int(1, 2)
        parts[-1] = parts[-1][:-1] + f", {head} hour{'s' if head > 1 else ''} after the first one left."
        gap = w.op(gap, "-", w.op(v1, "*", head))  # gap >= 200 km > v1 * head: the first train is still on the way
        after = "the second train leaves"
    else:
        after = "they leave" if "minutes" in chosen else "they set off"
    closing = w.op(v1, "+", v2)
    unit = "minutes" if "minutes" in chosen else "hours"
    parts.append(f"How many {unit} after {after} do the trains meet?")
    time = w.op(gap, "/", closing)
    if unit == "minutes":
        time = w.op(time, "*", 60)
    return " ".join(parts), time


def fencing(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (fencing): rectangular gardens to fence; asks the meters or the cost; exactly ``steps`` operations
    through ``w``. Returns (question text, exact answer)."""
    gardens = 2 if steps >= 5 else 1
    extras = steps - 2 - 3 * (gardens - 1)  # price, gate, coupon in that order
    sizes = [(d.int(4, 30), d.int(3, 20)) for _ in range(gardens)]
    name = d.pick(NAMES)
    shape = join_words([f"a {a} m by {b} m {d.pick(('garden', 'paddock', 'yard'))}" for a, b in sizes])
    parts = [f"{name} wants to put a fence around {shape}."]
    length = None
    for a, b in sizes:
        around = w.op(w.op(a, "+", b), "*", 2)
        length = around if length is None else w.op(length, "+", around)
    if extras == 0:
        return " ".join([*parts, "How many meters of fence are needed?"]), length
    price = d.int(3, 15)
    parts.append(f"Fencing costs ${price} per meter.")
    cost = w.op(length, "*", price)
    if extras >= 2:
        gate = d.int(20, 90)
        parts.append(f"A gate costs ${gate} more.")
        cost = w.op(cost, "+", gate)
    if extras >= 3:
        coupon = d.int(5, 40)
        parts.append(f"{name} has a ${coupon} coupon.")
        cost = w.op(cost, "-", coupon)
    return " ".join([*parts, "How much does the fencing cost, in dollars?"]), cost


def painting(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    # ops: 2 for the wall area, windows 0/2/3, coats 0/1, liters 0/1, cost 0/1 (coats and cost need liters)
    """Problem family (painting): a wall to paint, less windows; asks the area, the paint or its cost; exactly ``steps``
    operations through ``w``. Returns (question text, exact answer)."""
    plans = [
        (windows, coats, liters, cost)
        for windows in (0, 2, 3)
        for coats in (0, 1)
        for liters in (0, 1)
        for cost in (0, 1)
        if windows + coats + liters + cost == steps - 2 and liters >= max(coats, cost)
    ]
    windows, coats, liters, cost = d.pick(plans)
    name = d.pick(NAMES)
    width, height, walls = d.int(3, 8), d.pick((2, 3)), d.pick((2, 3, 4))
    parts = [f"{name} paints {walls} walls, each {width} m wide and {height} m high."]
    area = w.op(w.op(width, "*", height), "*", walls)
    if windows:
        a, b = d.int(1, 2), d.int(1, 2)
        parts.append(f"One wall has a {a} m by {b} m window that is not painted.")
        area = w.op(area, "-", w.op(a, "*", b))
    if windows == 3:
        parts.append("Another wall has a 1 m by 1 m window that is not painted either.")
        area = w.op(area, "-", 1)
    if not liters:
        return " ".join([*parts, "How many square meters are painted?"]), area
    if coats:
        parts.append("Every wall gets two coats of paint.")
        area = w.op(area, "*", 2)
    cover = d.pick((4, 5, 8, 10))
    parts.append(f"One liter of paint covers {cover} square meters.")
    amount = w.op(area, "/", cover)
    if not cost:
        return " ".join([*parts, "How many liters of paint are needed?"]), amount
    price = d.pick((4, 5, 8, 10, 12, 16, 20))
    parts.append(f"Paint is sold by the liter at ${price} per liter.")
    return " ".join([*parts, "How much does the paint cost, in dollars?"]), w.op(amount, "*", price)


def reading(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (reading): a reading plan in phases; asks the pages left or the days to finish; exactly ``steps``
    operations through ``w``. Returns (question text, exact answer)."""
    name = d.pick(NAMES)
    phases = steps // 2
    finish = steps % 2 == 1
    plan = [(d.int(5, 40), d.int(2, 7)) for _ in range(phases)]
    last_rate = d.int(10, 50)
    left_days = d.int(1, 8)
    pages = sum(r * n for r, n in plan) + (last_rate * left_days if finish else d.int(10, 120))
    book = d.pick(("novel", "biography", "textbook", "fantasy saga", "cookbook"))
    said = ". Then ".join(f"{name} reads {r} pages a day for {n} days" for r, n in plan)
    parts = [f"A {book} has {pages} pages. {said}."]
    left = pages
    for rate, days in plan:
        left = w.op(left, "-", w.op(rate, "*", days))
    if finish:
        parts.append(f"How many more days does {name} need to finish the book at {last_rate} pages a day?")
        return " ".join(parts), w.op(left, "/", last_rate)
    return " ".join([*parts, "How many pages are left to read?"]), left


FAMILIES = {
    "trip_legs": trip_legs,
    "unit_conversion": unit_conversion,
    "recipe_scaling": recipe_scaling,
    "mixtures": mixtures,
    "task_time": task_time,
    "work_together": work_together,
    "trains": trains,
    "fencing": fencing,
    "painting": painting,
    "reading": reading,
}
