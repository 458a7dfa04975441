"""Problem families: dictionaries, parsing, simulation and small algorithms (see ``problems.py``)."""

from __future__ import annotations

from ragen_envs.code.problems import Draw, Spec, family


@family("parse_pairs")
def _parse_pairs(r: Draw) -> Spec:
    item_sep, kv_sep = r.pick([(";", "="), (",", ":"), ("&", "="), ("|", "->")])
    return Spec(
        name=r.pick(["parse_pairs", "parse_settings", "read_key_values"]),
        params="text: str",
        returns="dict[str, int]",
        doc=f"`text` holds items separated by {item_sep!r}; each item is a key and an integer separated by "
        f"{kv_sep!r}, with optional spaces around both. Return them as a dict (a later key overwrites an "
        "earlier one); empty items are skipped.",
        body=(
            f"    out = {{}}\n    for item in text.split({item_sep!r}):\n        if not item.strip():\n            continue\n"
            f"        key, value = item.split({kv_sep!r}, 1)\n        out[key.strip()] = int(value)\n    return out"
        ),
        gen=lambda: (
            f"{item_sep}".join(f"{r.word()}{' ' * r.int(0, 1)}{kv_sep}{r.int(-9, 99)}" for _ in range(r.int(0, 4))),
        ),
        edges=(("",), (f"a{kv_sep}1{item_sep}a{kv_sep}2",), (f"{item_sep}{item_sep}x{kv_sep} 3{item_sep}",)),
    )


@family("invert_dict")
def _invert_dict(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["invert_dict", "group_keys_by_value", "reverse_mapping"]),
        params="mapping: dict[str, int]",
        returns="dict[int, list[str]]",
        doc="Return a dict from each value of `mapping` to the sorted list of keys that have that value.",
        body=(
            "    out = {}\n    for key, value in mapping.items():\n        out.setdefault(value, []).append(key)\n"
            "    return {value: sorted(keys) for value, keys in out.items()}"
        ),
        gen=lambda: ({r.word(): r.int(0, 3) for _ in range(r.int(0, 6))},),
        edges=(({},), ({"a": 1, "b": 1},)),
    )


@family("word_count")
def _word_count(r: Draw) -> Spec:
    fold = r.bool()
    return Spec(
        name=r.pick(["word_count", "count_words", "word_frequencies"]),
        params="text: str",
        returns="dict[str, int]",
        doc="Return a dict counting the whitespace-separated words of `text`"
        + (", compared case-insensitively (keys lower-cased)." if fold else ", case-sensitively."),
        body=(
            "    out = {}\n    for w in text.split():\n"
            + ("        w = w.lower()\n" if fold else "")
            + "        out[w] = out.get(w, 0) + 1\n    return out"
        ),
        gen=lambda: (
            " ".join(
                w.upper() if r.bool(0.3) else w
                for w in [r.pick(["ox", "cat", "Dog", "ant"]) for _ in range(r.int(0, 8))]
            ),
        ),
        edges=(("",), ("A a",)),
    )


@family("group_by_length")
def _group_by_length(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["group_by_length", "bucket_words", "words_by_size"]),
        params="words: list[str]",
        returns="dict[int, list[str]]",
        doc="Return a dict from word length to the sorted list of the distinct words of that length.",
        body=(
            "    out = {}\n    for w in words:\n        out.setdefault(len(w), set()).add(w)\n"
            "    return {n: sorted(ws) for n, ws in out.items()}"
        ),
        gen=lambda: (r.words(0, 7),),
        edges=(([],), (["", "a", "a"],)),
    )


@family("eval_rpn")
def _eval_rpn(r: Draw) -> Spec:
    ops = r.pick(["+-*", "+-", "+*"])

    def gen():
        stack, tokens = 0, []
        for _ in range(r.int(1, 6)):
            tokens.append(str(r.int(0, 9)))
            stack += 1
            while stack >= 2 and r.bool(0.6):
                tokens.append(r.pick(ops))
                stack -= 1
        while stack >= 2:
            tokens.append(r.pick(ops))
            stack -= 1
        return (" ".join(tokens),)

    return Spec(
        name=r.pick(["eval_rpn", "evaluate_postfix", "rpn_calculator"]),
        params="expression: str",
        returns="int",
        doc=f"Evaluate a valid reverse-Polish expression of non-negative integers and the operators {' '.join(ops)}, "
        "tokens separated by single spaces. The operator applies to the two most recent values (first pushed on the left).",
        body=(
            "    stack = []\n    for tok in expression.split():\n        if tok in '+-*':\n"
            "            b, a = stack.pop(), stack.pop()\n"
            "            stack.append(a + b if tok == '+' else a - b if tok == '-' else a * b)\n"
            "        else:\n            stack.append(int(tok))\n    return stack[-1]"
        ),
        gen=gen,
        edges=(("7",), ("3 4 " + ops[-1],)),
    )


@family("balanced")
def _balanced(r: Draw) -> Spec:
    pairs = r.pick(["()[]", "(){}", "()[]{}", "<>()"])
    opens, closes = pairs[0::2], pairs[1::2]
    return Spec(
        name=r.pick(["is_balanced", "brackets_match", "well_nested"]),
        params="text: str",
        returns="bool",
        doc=f"Return True if the brackets {' '.join(pairs[i : i + 2] for i in range(0, len(pairs), 2))} in `text` are "
        "balanced and properly nested; every other character is ignored.",
        body=(
            f"    match = dict(zip({closes!r}, {opens!r}))\n    stack = []\n    for ch in text:\n"
            f"        if ch in {opens!r}:\n            stack.append(ch)\n        elif ch in match:\n"
            "            if not stack or stack.pop() != match[ch]:\n                return False\n    return not stack"
        ),
        gen=lambda: (r.string(pairs + "ab", 0, 12),),
        edges=(("",), (closes[0],), (opens[0] + opens[-1] + closes[0] + closes[-1],), ("x",)),
    )


@family("robot_walk")
def _robot_walk(r: Draw) -> Spec:
    step = r.int(1, 3)
    letters = r.pick(["UDLR", "NSWE"])
    up, down, left, right = letters
    return Spec(
        name=r.pick(["robot_position", "final_position", "walk"]),
        params="moves: str",
        returns="list[int]",
        doc=f"A robot starts at [0, 0]. Each character of `moves` moves it {step} unit(s): {up!r} is +y, {down!r} "
        f"is -y, {left!r} is -x, {right!r} is +x; any other character is ignored. Return the final [x, y].",
        body=(
            "    x = y = 0\n    for ch in moves:\n"
            f"        if ch == {up!r}:\n            y += {step}\n        elif ch == {down!r}:\n            y -= {step}\n"
            f"        elif ch == {left!r}:\n            x -= {step}\n        elif ch == {right!r}:\n            x += {step}\n"
            "    return [x, y]"
        ),
        gen=lambda: (r.string(letters + "?", 0, 15),),
        edges=(("",), ("??",), (up + down,)),
    )


@family("bank_account")
def _bank_account(r: Draw) -> Spec:
    fee = r.int(0, 3)
    return Spec(
        name=r.pick(["final_balance", "process_transactions", "run_account"]),
        params="transactions: list[list]",
        returns="int",
        doc="Start from a balance of 0 and apply `transactions` in order; each is ['deposit', amount] or "
        f"['withdraw', amount]. A withdrawal costs the amount plus a fee of {fee} and is skipped entirely if the "
        "balance would go below 0. Return the final balance.",
        body=(
            "    balance = 0\n    for kind, amount in transactions:\n        if kind == 'deposit':\n"
            f"            balance += amount\n        elif balance - amount - {fee} >= 0:\n            balance -= amount + {fee}\n"
            "    return balance"
        ),
        gen=lambda: ([[r.pick(["deposit", "withdraw"]), r.int(1, 50)] for _ in range(r.int(0, 6))],),
        edges=(([],), ([["withdraw", 1]],), ([["deposit", 5], ["withdraw", 5 - fee]],)),
    )


@family("parse_duration")
def _parse_duration(r: Draw) -> Spec:
    units = r.pick([("h", "m", "s"), ("d", "h", "m")])
    scale = {("h", "m", "s"): (3600, 60, 1), ("d", "h", "m"): (1440, 60, 1)}[units]
    word = "seconds" if units[-1] == "s" else "minutes"

    def gen():
        parts = [f"{r.int(0, 99)}{u}" for u in units if r.bool(0.7)]
        return ("".join(parts) or f"0{units[-1]}",)

    return Spec(
        name=r.pick(["parse_duration", "duration_to_units", "total_time"]),
        params="text: str",
        returns="int",
        doc=f"`text` is a duration such as '1{units[0]}30{units[1]}5{units[2]}': numbers each followed by one of the "
        f"units {', '.join(units)} (each unit at most once, in that order, any may be missing). Return the total in "
        f"{word} (1{units[0]} = {scale[0]}{units[2]}, 1{units[1]} = {scale[1]}{units[2]}).",
        body=(
            f"    scale = {dict(zip(units, scale, strict=True))!r}\n    total = 0\n    number = ''\n    for ch in text:\n"
            "        if ch.isdigit():\n            number += ch\n        else:\n"
            "            total += int(number) * scale[ch]\n            number = ''\n    return total"
        ),
        gen=gen,
        edges=((f"0{units[-1]}",), (f"1{units[0]}",), (f"99{units[0]}99{units[1]}99{units[2]}",)),
    )


@family("count_islands")
def _count_islands(r: Draw) -> Spec:
    diagonal = r.bool()
    land = r.pick(["#", "1", "X"])
    steps = "[(1, 0), (-1, 0), (0, 1), (0, -1)" + (", (1, 1), (1, -1), (-1, 1), (-1, -1)]" if diagonal else "]")

    def gen():
        h, w = r.int(1, 5), r.int(1, 5)
        return ([r.string(land + "..", w, w) for _ in range(h)],)

    return Spec(
        name=r.pick(["count_islands", "land_masses", "count_regions"]),
        params="grid: list[str]",
        returns="int",
        doc=f"`grid` is a list of equal-length rows; {land!r} is land, anything else water. Cells of land touching "
        + ("horizontally, vertically or diagonally" if diagonal else "horizontally or vertically (not diagonally)")
        + " belong to the same island. Return the number of islands.",
        body=(
            "    seen = set()\n    count = 0\n    for r0 in range(len(grid)):\n        for c0 in range(len(grid[r0])):\n"
            f"            if grid[r0][c0] != {land!r} or (r0, c0) in seen:\n                continue\n"
            "            count += 1\n            stack = [(r0, c0)]\n            seen.add((r0, c0))\n            while stack:\n"
            f"                r, c = stack.pop()\n                for dr, dc in {steps}:\n"
            "                    nr, nc = r + dr, c + dc\n"
            "                    if 0 <= nr < len(grid) and 0 <= nc < len(grid[nr]) and (nr, nc) not in seen \\\n"
            f"                            and grid[nr][nc] == {land!r}:\n"
            "                        seen.add((nr, nc))\n                        stack.append((nr, nc))\n    return count"
        ),
        gen=gen,
        edges=(([],), ([land + ".", "." + land],), ([land * 3],)),
    )


@family("transpose")
def _transpose(r: Draw) -> Spec:
    def gen():
        h, w = r.int(0, 4), r.int(1, 4)
        return ([[r.int(0, 9) for _ in range(w)] for _ in range(h)],)

    return Spec(
        name=r.pick(["transpose", "flip_matrix", "swap_rows_columns"]),
        params="matrix: list[list[int]]",
        returns="list[list[int]]",
        doc="Return the transpose of the rectangular `matrix` (rows become columns); [] gives [].",
        body="    return [list(col) for col in zip(*matrix)]",
        gen=gen,
        edges=(([],), ([[1, 2, 3]],), ([[1], [2]],)),
    )


@family("spiral")
def _spiral(r: Draw) -> Spec:
    clockwise = r.bool()

    def gen():
        h, w = r.int(1, 4), r.int(1, 4)
        return ([[r.int(0, 9) for _ in range(w)] for _ in range(h)],)

    body_cw = (
        "    out = []\n    m = [row[:] for row in matrix]\n    while m:\n        out += m.pop(0)\n"
        "        m = [list(row) for row in zip(*m)][::-1]\n    return out"
    )
    body_ccw = (
        "    out = []\n    m = [list(row) for row in zip(*matrix)]\n    while m:\n        out += m.pop(0)\n"
        "        m = [list(row) for row in zip(*m)][::-1]\n    return out"
    )
    return Spec(
        name=r.pick(["spiral_order", "spiral", "unroll_matrix"]),
        params="matrix: list[list[int]]",
        returns="list[int]",
        doc="Return the elements of the rectangular `matrix` in spiral order starting at the top-left corner and "
        + ("going right first (clockwise)." if clockwise else "going down first (counter-clockwise).")
        + " [] gives [].",
        body=body_cw if clockwise else body_ccw,
        gen=gen,
        edges=(([],), ([[1, 2, 3]],), ([[1], [2], [3]],)),
    )


@family("insert_position")
def _insert_position(r: Draw) -> Spec:
    right = r.bool()
    return Spec(
        name=r.pick(["insert_position", "search_insert", "bisect_index"]),
        params="sorted_nums: list[int], target: int",
        returns="int",
        doc="`sorted_nums` is sorted ascending. Return the index at which `target` would be inserted to keep it "
        "sorted, placing it " + ("after" if right else "before") + " any elements equal to it.",
        prelude="import bisect",
        body=f"    return bisect.bisect_{'right' if right else 'left'}(sorted_nums, target)",
        gen=lambda: (sorted(r.ints(0, 8, 0, 9)), r.int(-1, 10)),
        edges=(([], 3), ([1, 1, 1], 1), ([2, 4], 5)),
    )


@family("stack_machine")
def _stack_machine(r: Draw) -> Spec:
    def gen():
        out, depth = [], 0
        for _ in range(r.int(0, 8)):
            op = r.pick(["push", "push", "pop", "add", "dup"])
            if op == "push":
                out.append(f"push {r.int(-5, 9)}")
                depth += 1
            elif op in ("pop", "dup") and depth >= 1:
                out.append(op)
                depth += 1 if op == "dup" else -1
            elif op == "add" and depth >= 2:
                out.append(op)
                depth -= 1
        return (out,)

    return Spec(
        name=r.pick(["run_stack_machine", "execute_commands", "stack_program"]),
        params="commands: list[str]",
        returns="list[int]",
        doc="Run `commands` on an empty stack: 'push X' pushes the integer X, 'pop' removes the top, 'dup' "
        "pushes a copy of the top, 'add' replaces the top two values by their sum. Commands are always valid. "
        "Return the final stack, bottom first.",
        body=(
            "    stack = []\n    for cmd in commands:\n        if cmd.startswith('push'):\n"
            "            stack.append(int(cmd.split()[1]))\n        elif cmd == 'pop':\n            stack.pop()\n"
            "        elif cmd == 'dup':\n            stack.append(stack[-1])\n        elif cmd == 'add':\n"
            "            b, a = stack.pop(), stack.pop()\n            stack.append(a + b)\n    return stack"
        ),
        gen=gen,
        edges=(([],), (["push 1", "dup", "add"],)),
    )


@family("top_k_words")
def _top_k_words(r: Draw) -> Spec:
    k = r.int(1, 3)
    return Spec(
        name=r.pick(["top_words", "most_frequent_words", "top_k_words"]),
        params="words: list[str]",
        returns="list[str]",
        doc=f"Return the {k} most frequent words of `words` (fewer if there are fewer distinct words), most frequent "
        "first; ties are broken alphabetically.",
        body=(
            "    counts = {}\n    for w in words:\n        counts[w] = counts.get(w, 0) + 1\n"
            f"    return sorted(counts, key=lambda w: (-counts[w], w))[:{k}]"
        ),
        gen=lambda: ([r.pick(["red", "blue", "green", "gold", "grey"]) for _ in range(r.int(0, 9))],),
        edges=(([],), (["b", "a"],)),
    )


@family("merge_intervals")
def _merge_intervals(r: Draw) -> Spec:
    touching = r.bool()
    op = "<=" if touching else "<"
    return Spec(
        name=r.pick(["merge_intervals", "union_ranges", "combine_spans"]),
        params="intervals: list[list[int]]",
        returns="list[list[int]]",
        doc="Each interval is [start, end] with start ≤ end. Merge overlapping intervals"
        + (
            " (intervals that only touch, like [1, 2] and [2, 3], merge too)"
            if touching
            else " (intervals that only touch, like [1, 2] and [2, 3], stay separate)"
        )
        + " and return them sorted by start.",
        body=(
            "    out = []\n    for start, end in sorted(intervals):\n"
            f"        if out and start {op} out[-1][1]:\n            out[-1][1] = max(out[-1][1], end)\n"
            "        else:\n            out.append([start, end])\n    return out"
        ),
        gen=lambda: ([(lambda a: [a, a + r.int(0, 4)])(r.int(0, 15)) for _ in range(r.int(0, 5))],),
        edges=(([],), ([[1, 2], [2, 3]],), ([[5, 5]],)),
    )


@family("valid_ipv4")
def _valid_ipv4(r: Draw) -> Spec:
    zeros_ok = r.bool()

    def gen():
        parts = [str(r.pick([r.int(0, 255), r.int(0, 300)])) for _ in range(r.pick([3, 4, 4, 4, 5]))]
        if r.bool(0.2):
            parts[0] = "0" + parts[0]
        return (".".join(parts),)

    return Spec(
        name=r.pick(["is_valid_ipv4", "valid_ip", "check_ipv4"]),
        params="address: str",
        returns="bool",
        doc="Return True if `address` is four decimal numbers from 0 to 255 separated by dots, with no other "
        "characters" + ("" if zeros_ok else ' and no leading zeros ("01" is invalid, "0" is fine)') + ".",
        body=(
            "    parts = address.split('.')\n    if len(parts) != 4:\n        return False\n    for p in parts:\n"
            "        if not p.isdigit() or not p.isascii() or int(p) > 255:\n            return False\n"
            + ("" if zeros_ok else "        if len(p) > 1 and p[0] == '0':\n            return False\n")
            + "    return True"
        ),
        gen=gen,
        edges=(("",), ("1.2.3",), ("0.0.0.0",), ("01.2.3.4",), ("1.2.3.4 ",)),
    )


@family("day_of_year")
def _day_of_year(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["day_of_year", "ordinal_day", "days_into_year"]),
        params="year: int, month: int, day: int",
        returns="int",
        doc="Return the day number within the year (1 for January 1st) of a valid Gregorian date; leap years "
        "are divisible by 4, except centuries not divisible by 400. Do not use the datetime module.",
        body=(
            "    days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]\n"
            "    if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):\n        days[1] = 29\n"
            "    return sum(days[:month - 1]) + day"
        ),
        gen=lambda: (r.int(1600, 2400), r.int(1, 12), r.int(1, 28)),
        edges=((2000, 12, 31), (1900, 3, 1), (2024, 1, 1)),
    )


@family("sum_dicts")
def _sum_dicts(r: Draw) -> Spec:
    drop_zero = r.bool()
    return Spec(
        name=r.pick(["merge_counts", "add_dicts", "combine_tallies"]),
        params="a: dict[str, int], b: dict[str, int]",
        returns="dict[str, int]",
        doc="Return a dict with every key of `a` and `b`, whose value is the sum of the values in both (a missing "
        "key counts as 0)" + ("; keys whose sum is 0 are left out." if drop_zero else "."),
        body=(
            "    out = dict(a)\n    for k, v in b.items():\n        out[k] = out.get(k, 0) + v\n"
            + ("    return {k: v for k, v in out.items() if v != 0}" if drop_zero else "    return out")
        ),
        gen=lambda: tuple({r.pick(["x", "y", "z", "w"]): r.int(-3, 3) for _ in range(r.int(0, 3))} for _ in range(2)),
        edges=(({}, {}), ({"a": 1}, {"a": -1})),
    )
