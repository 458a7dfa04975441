"""MathWord problem families about people and counts: ages, comparisons, funnels, ratios, averages,
packing, growth and decay.

Each family is ``family(draw, work, steps) -> (text, answer)`` and performs exactly ``steps`` operations
through ``work`` (see :mod:`ragen_envs.math.word_kit`).
"""

from __future__ import annotations

from fractions import Fraction

from ragen_envs.math.word_kit import NAMES, Draw, Work, join_words, names, num, percent, ratio_text

COLLECTIBLES = ("marbles", "stickers", "stamps", "seashells", "trading cards", "coins", "books", "pebbles")


def ages(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (ages): a chain of relative ages; asks the first person's age; exactly ``steps`` operations
    through ``w``. Returns (question text, exact answer)."""
    people = names(d, steps + 1)
    age = d.int(3, 9)
    facts = [f"{people[-1]} is {num(age)} years old."]
    for index in range(steps - 1, -1, -1):
        who, of = people[index], people[index + 1]
        if age <= 20 and d.chance(0.3):
            factor = d.int(2, 3)
            facts.append(f"{who} is {'twice' if factor == 2 else 'three times'} as old as {of}.")
            age = w.op(age, "*", factor)
        elif age % 2 == 0 and age >= 12 and d.chance(0.3):
            facts.append(f"{who} is half as old as {of}.")
            age = w.op(age, "/", 2)
        elif age > 15 and d.chance(0.4):
            gap = d.int(2, min(12, int(age) - 2))
            facts.append(f"{who} is {gap} years younger than {of}.")
            age = w.op(age, "-", gap)
        else:
            gap = d.int(2, 15)
            facts.append(f"{who} is {gap} years older than {of}.")
            age = w.op(age, "+", gap)
    if d.chance(0.5):
        facts.reverse()
    return " ".join([*facts, f"How old is {people[0]}?"]), age


def comparisons(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (comparisons): people who have more or fewer of a collectible than each other; asks a total;
    exactly ``steps`` operations through ``w``. Returns (question text, exact answer)."""
    thing = d.pick(COLLECTIBLES)
    total_all = steps % 2 == 0 and d.chance(0.6)
    links = steps // 2 if total_all else steps - 1
    people = names(d, links + 1)
    counts = [d.int(4, 30)]
    facts = [f"{people[0]} has {num(counts[0])} {thing}."]
    for index in range(1, links + 1):
        prev, who = counts[-1], people[index]
        if prev <= 40 and d.chance(0.35):
            factor = d.int(2, 4)
            facts.append(f"{who} has {factor} times as many {thing} as {people[index - 1]}.")
            counts.append(w.op(prev, "*", factor))
        elif prev > 10 and d.chance(0.4):
            gap = d.int(1, int(prev) - 3)
            facts.append(f"{who} has {gap} fewer {thing} than {people[index - 1]}.")
            counts.append(w.op(prev, "-", gap))
        else:
            gap = d.int(2, 20)
            facts.append(f"{who} has {gap} more {thing} than {people[index - 1]}.")
            counts.append(w.op(prev, "+", gap))
    if total_all:
        total = counts[0]
        for count in counts[1:]:
            total = w.op(total, "+", count)
        return " ".join([*facts, f"How many {thing} do they have altogether?"]), total
    question = f"How many {thing} do {people[0]} and {people[-1]} have together?"
    return " ".join([*facts, question]), w.op(counts[0], "+", counts[-1])


FUNNEL = (
    "sign up", "open the welcome email", "click the link in it", "start a free trial", "buy a plan",
    "leave a review", "renew after a year", "refer a friend",
)  # fmt: skip


_SHARES = (
    Fraction(1, 2),
    Fraction(1, 4),
    Fraction(3, 4),
    Fraction(1, 5),
    Fraction(2, 5),
    Fraction(3, 5),
    Fraction(4, 5),
)


def funnel(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (funnel): visitors kept by successive shares at each stage; asks how many reach the last; exactly
    ``steps`` operations through ``w``. Returns (question text, exact answer)."""
    shares = [d.pick(_SHARES) for _ in range(steps)]
    scale = 1
    for share in shares:
        scale *= share.denominator
    count = scale * d.int(1, max(1, 4000 // scale))
    site = d.pick(("A website", "A new app", "An online course", "A music service"))
    parts = [f"{site} has {num(count)} visitors in a month."]
    for index, share in enumerate(shares):
        shown = percent(share) if d.chance(0.5) else ratio_text(share)
        if index == 0:
            parts.append(f"{shown[0].upper()}{shown[1:]} of them {FUNNEL[0]}.")
        else:
            parts.append(f"Of those, {shown} {FUNNEL[index]}.")
        count = w.op(count, "*", share)
    return " ".join([*parts, f"How many visitors {FUNNEL[steps - 1]}?"]), count


COLORS = ("red", "blue", "green", "yellow", "white", "black")


def ratios(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (ratios): colors in a given ratio with one count known; asks the total of some colors; exactly
    ``steps`` operations through ``w``. Returns (question text, exact answer)."""
    include_known = steps % 2 == 1
    asked = (steps + 1) // 2 if include_known else steps // 2
    colors = d.sample(COLORS, asked + (0 if include_known else 1))
    parts_of = [d.int(1, 7) for _ in colors]
    thing = d.pick(("beads", "balloons", "tulips", "socks", "marbles"))
    unit = d.int(2, 12)
    known = parts_of[0] * unit
    ratio = ":".join(map(str, parts_of))
    parts = [f"A bag holds {join_words(colors)} {thing} in the ratio {ratio}. There are {known} {colors[0]} {thing}."]
    share = w.op(known, "/", parts_of[0])
    wanted = colors if include_known else colors[1:]
    total = None
    for color in wanted:
        index = colors.index(color)
        amount = known if index == 0 else w.op(share, "*", parts_of[index])
        total = amount if total is None else w.op(total, "+", amount)
    return " ".join([*parts, f"How many {join_words(wanted)} {thing} are there in total?"]), total


# unit ladders: (unit, how many of the next unit it holds); each ladder has sentence templates


def averages(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (averages): test scores; asks the mean, or the score needed on one more test to reach a mean;
    exactly ``steps`` operations through ``w``. Returns (question text, exact answer)."""
    name = d.pick(NAMES)
    subject = d.pick(("math", "history", "spelling", "chemistry", "music theory"))
    if d.chance(0.5):  # the mean of `steps` scores: steps-1 additions and one division
        scores = [d.int(55, 100) for _ in range(steps)]
        listed = join_words([str(x) for x in scores])
        text = f"{name} scored {listed} on {steps} {subject} tests. What is {name}'s average score?"
        total = scores[0]
        for score in scores[1:]:
            total = w.op(total, "+", score)
        return text, w.op(total, "/", steps)
    count = steps - 1  # the score needed next: one product, count-1 additions, one subtraction
    scores = [d.int(60, 95) for _ in range(count)]
    goal = d.int((sum(scores) + 60) // (count + 1) + 1, (sum(scores) + 100) // (count + 1))
    listed = join_words([str(x) for x in scores])
    text = (
        f"{name} scored {listed} on {count} {subject} test{'s' if count > 1 else ''}. What must {name} score on the "
        f"next test to have an average of exactly {goal} over all {count + 1} tests?"
    )
    needed = w.op(goal, "*", count + 1)
    total = scores[0]
    for score in scores[1:]:
        total = w.op(total, "+", score)
    return text, w.op(needed, "-", total)


def packing(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    # ops: 2*batches - 1 to count what was baked, one division into bags, plus one per extra event
    """Problem family (packing): batches baked, some brought, eaten or given, packed into bags; asks the bags; exactly
    ``steps`` operations through ``w``. Returns (question text, exact answer)."""
    extras = [e for e in range(0, 4) if (steps - e) % 2 == 0 and 1 <= (steps - e) // 2 <= 3]
    chosen = d.sample(("brought", "eaten", "gift"), d.pick(extras))
    batches = (steps - len(chosen)) // 2
    name = d.pick(NAMES)
    food = d.pick(("cookies", "muffins", "dumplings", "cupcakes", "bread rolls"))
    size = d.pick((2, 3, 4, 5, 6, 8, 10, 12))
    if "eaten" in chosen:  # the family eats what does not fit into full bags (and maybe one bag more)
        trays = [(d.int(2, 6), d.int(6, 24)) for _ in range(batches)]
        brought = d.int(3, 20) if "brought" in chosen else 0
        before = sum(a * b for a, b in trays) + brought
        size = min(size, before // 3)
        eaten = before % size or size
    else:  # trays of a multiple of the bag size
        trays = [(d.int(2, 6), size * d.int(2, max(2, 24 // size))) for _ in range(batches)]
        brought = size * d.int(1, 4) if "brought" in chosen else 0
        eaten = 0
    parts = [f"{name} bakes {join_words([f'{a} trays of {b} {food}' for a, b in trays])}."]
    total = None
    for a, b in trays:
        made = w.op(a, "*", b)
        total = made if total is None else w.op(total, "+", made)
    if brought:
        parts.append(f"A friend brings {brought} more {food}.")
        total = w.op(total, "+", brought)
    if eaten:
        parts.append(f"The family eats {eaten} of them.")
        total = w.op(total, "-", eaten)
    parts.append(f"{name} packs {'the rest' if eaten else 'them all'} into bags of {size}.")
    bags = w.op(total, "/", size)
    if "gift" in chosen:
        given = d.int(1, int(bags) - 1)
        parts.append(f"{name} gives {given} bag{'s' if given > 1 else ''} to the neighbors.")
        return " ".join([*parts, f"How many bags does {name} keep?"]), w.op(bags, "-", given)
    return " ".join([*parts, "How many bags are there?"]), bags


def growth(d: Draw, w: Work, steps: int) -> tuple[str, Fraction]:
    """Problem family (growth): a quantity that doubles, triples or halves every few hours; asks the amount later;
    exactly ``steps`` operations through ``w``. Returns (question text, exact answer)."""
    periods = steps - 1
    every = d.int(2, 6)
    if d.chance(0.6):
        start, factor = d.int(2, 60), d.pick((2, 3))
        verb = "doubles" if factor == 2 else "triples"
        thing = d.pick(("bacteria in a dish", "yeast cells", "followers of a new account", "algae cells"))
        text = f"There are {start} {thing}. The number {verb} every {every} hours. How many are there after {every * periods} hours?"
        symbol = "*"
    else:
        factor = 2
        start = factor**periods * d.int(1, 9)
        thing = d.pick(("grams of a radioactive sample", "milligrams of a medicine in the blood"))
        text = f"A lab has {start} {thing}. The amount halves every {every} hours. How many are left after {every * periods} hours?"
        symbol = "/"
    count = w.op(every * periods, "/", every)  # the number of periods
    value = start
    for _ in range(int(count)):
        value = w.op(value, symbol, factor)
    return text, value


FAMILIES = {
    "ages": ages,
    "comparisons": comparisons,
    "funnel": funnel,
    "ratios": ratios,
    "averages": averages,
    "packing": packing,
    "growth": growth,
}
