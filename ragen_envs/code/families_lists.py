"""Problem families over lists (see ``problems.py`` for what a family is)."""

from __future__ import annotations

from ragen_envs.code.problems import Draw, Spec, family


@family("running_sum")
def _running_sum(r: Draw) -> Spec:
    start = r.int(-5, 5)
    return Spec(
        name=r.pick(["running_sum", "prefix_sums", "cumulative_total"]),
        params="nums: list[int]",
        returns="list[int]",
        doc=f"Return the running totals of `nums`, where the total starts at {start} before the first element "
        "(so the result has one entry per element).",
        body=f"    total = {start}\n    out = []\n    for x in nums:\n        total += x\n        out.append(total)\n    return out",
        gen=lambda: (r.ints(0, 8, -9, 9),),
        edges=(([],), ([0],), ([-1, 1],)),
    )


@family("second_largest")
def _second_largest(r: Draw) -> Spec:
    smallest = r.bool()
    word = "second smallest" if smallest else "second largest"
    return Spec(
        name=r.pick(["second_smallest" if smallest else "second_largest", "runner_up", "next_best"]),
        params="nums: list[int]",
        returns="int | None",
        doc=f"Return the {word} *distinct* value in `nums`, or None if there are fewer than two distinct values.",
        body=(
            f"    values = sorted(set(nums){'' if smallest else ', reverse=True'})\n"
            "    return values[1] if len(values) >= 2 else None"
        ),
        gen=lambda: (r.ints(0, 8, -5, 5),),
        edges=(([],), ([3, 3],), ([1, 2],), ([5],)),
    )


@family("chunk")
def _chunk(r: Draw) -> Spec:
    size = r.int(2, 4)
    return Spec(
        name=r.pick(["chunk_list", "split_into_chunks", "batches"]),
        params="items: list[int]",
        returns="list[list[int]]",
        doc=f"Split `items` into consecutive chunks of {size} elements; the last chunk may be shorter. "
        "An empty list gives no chunks.",
        body=f"    return [items[i:i + {size}] for i in range(0, len(items), {size})]",
        gen=lambda: (r.ints(0, 11, 0, 9),),
        edges=(([],), ([1],), (list(range(size)),)),
    )


@family("rotate_list")
def _rotate_list(r: Draw) -> Spec:
    right = r.bool()
    return Spec(
        name=r.pick(["rotate_list", "cycle_items", "shift_list"]),
        params="items: list[int], k: int",
        returns="list[int]",
        doc=f"Return `items` rotated {'right' if right else 'left'} by `k` places (k ≥ 0, possibly larger than "
        "the length). Do not modify the input.",
        body=(
            "    if not items:\n        return []\n    k %= len(items)\n"
            + (
                "    return items[len(items) - k:] + items[:len(items) - k]"
                if right
                else "    return items[k:] + items[:k]"
            )
        ),
        gen=lambda: (r.ints(0, 7, 0, 9), r.int(0, 10)),
        edges=(([], 2), ([1, 2, 3], 0), ([1, 2, 3], 3), ([1, 2], 5)),
    )


@family("flatten")
def _flatten(r: Draw) -> Spec:
    def nested(depth: int):
        out = []
        for _ in range(r.int(0, 3)):
            out.append(nested(depth - 1) if depth > 0 and r.bool(0.4) else r.int(0, 9))
        return out

    name = r.pick(["flatten", "flatten_nested", "unnest"])
    return Spec(
        name=name,
        params="nested: list",
        returns="list[int]",
        doc="`nested` holds integers and lists (which may nest further). Return all the integers in "
        "left-to-right order as one flat list.",
        body=(
            "    out = []\n    for x in nested:\n        if isinstance(x, list):\n            out.extend("
            + f"{name}(x))\n        else:\n            out.append(x)\n    return out"
        ),
        gen=lambda: (nested(3),),
        edges=(([],), ([[]],), ([[[1]], 2],)),
    )


@family("drop_every_kth")
def _drop_every_kth(r: Draw) -> Spec:
    k = r.int(2, 4)
    return Spec(
        name=r.pick(["drop_every_kth", "remove_every_nth", "thin_out"]),
        params="items: list[int]",
        returns="list[int]",
        doc=f"Return `items` without every {k}th element (the elements at positions {k}, {2 * k}, … counting from 1).",
        body=f"    return [x for i, x in enumerate(items, 1) if i % {k} != 0]",
        gen=lambda: (r.ints(0, 12, 0, 20),),
        edges=(([],), (list(range(k)),)),
    )


@family("pairwise_diff")
def _pairwise_diff(r: Draw) -> Spec:
    absolute = r.bool()
    expr = "abs(b - a)" if absolute else "b - a"
    return Spec(
        name=r.pick(["pairwise_differences", "deltas", "successive_gaps"]),
        params="nums: list[int]",
        returns="list[int]",
        doc="Return the differences between consecutive elements (each element minus the one before it"
        + (", as absolute values" if absolute else "")
        + "). A list with fewer than two elements gives [].",
        body=f"    return [{expr} for a, b in zip(nums, nums[1:])]",
        gen=lambda: (r.ints(0, 8, -10, 10),),
        edges=(([],), ([4],), ([3, 1],)),
    )


@family("moving_average")
def _moving_average(r: Draw) -> Spec:
    w = r.int(2, 4)
    return Spec(
        name=r.pick(["moving_average", "rolling_mean", "window_means"]),
        params="nums: list[int]",
        returns="list[float]",
        doc=f"Return the averages of every window of {w} consecutive elements of `nums`, each rounded to 2 "
        f"decimals with round(). Fewer than {w} elements give [].",
        body=f"    return [round(sum(nums[i:i + {w}]) / {w}, 2) for i in range(len(nums) - {w} + 1)]",
        gen=lambda: (r.ints(0, 9, -20, 20),),
        edges=(([],), ([1] * (w - 1),), ([1] * w,)),
    )


@family("count_above")
def _count_above(r: Draw) -> Spec:
    t = r.int(-3, 6)
    strict = r.bool()
    return Spec(
        name=r.pick(["count_above", "how_many_exceed", "count_over_threshold"]),
        params="nums: list[int]",
        returns="int",
        doc=f"Return how many elements of `nums` are {'greater than' if strict else 'at least'} {t}.",
        body=f"    return sum(1 for x in nums if x {'>' if strict else '>='} {t})",
        gen=lambda: (r.ints(0, 10, -8, 12),),
        edges=(([],), ([t],), ([t - 1, t + 1],)),
    )


@family("merge_sorted")
def _merge_sorted(r: Draw) -> Spec:
    descending = r.bool()
    order = "descending" if descending else "ascending"
    return Spec(
        name=r.pick(["merge_sorted", "merge_two_sorted", "combine_sorted"]),
        params="a: list[int], b: list[int]",
        returns="list[int]",
        doc=f"`a` and `b` are each sorted in {order} order. Return one list with all their elements, sorted in "
        f"{order} order (keep duplicates).",
        body=f"    return sorted(a + b{', reverse=True' if descending else ''})",
        gen=lambda: tuple(sorted(r.ints(0, 6, -9, 9), reverse=descending) for _ in range(2)),
        edges=(([], []), ([1], []), ([2, 2], [2])),
    )


@family("unique_in_order")
def _unique_in_order(r: Draw) -> Spec:
    last = r.bool()
    return Spec(
        name=r.pick(["unique_in_order", "dedupe", "distinct_values"]),
        params="items: list[int]",
        returns="list[int]",
        doc="Return the distinct values of `items`, each once, ordered by the position of their "
        f"{'last' if last else 'first'} occurrence.",
        body=(
            "    seen = set()\n    out = []\n    for x in "
            + ("reversed(items)" if last else "items")
            + ":\n        if x not in seen:\n            seen.add(x)\n            out.append(x)\n"
            + ("    return out[::-1]" if last else "    return out")
        ),
        gen=lambda: (r.ints(0, 10, 0, 5),),
        edges=(([],), ([1, 1, 1],), ([1, 2, 1],)),
    )


@family("max_subarray")
def _max_subarray(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["max_subarray_sum", "best_contiguous_sum", "largest_run_total"]),
        params="nums: list[int]",
        returns="int",
        doc="Return the largest sum of a non-empty contiguous slice of `nums`; return 0 for an empty list.",
        body=(
            "    if not nums:\n        return 0\n    best = cur = nums[0]\n    for x in nums[1:]:\n"
            "        cur = max(x, cur + x)\n        best = max(best, cur)\n    return best"
        ),
        gen=lambda: (r.ints(0, 10, -10, 10),),
        edges=(([],), ([-3, -1, -2],), ([5],)),
    )


@family("two_sum")
def _two_sum(r: Draw) -> Spec:
    target = r.int(4, 12)
    return Spec(
        name=r.pick(["two_sum", "find_pair", "pair_with_sum"]),
        params="nums: list[int]",
        returns="list[int] | None",
        doc=f"Return the indices [i, j] (i < j) of two elements that add up to {target}: the pair with the "
        "smallest j, and for that j the smallest i. Return None if there is no such pair.",
        body=(
            f"    for j in range(len(nums)):\n        for i in range(j):\n            if nums[i] + nums[j] == {target}:\n"
            "                return [i, j]\n    return None"
        ),
        gen=lambda: (r.ints(0, 8, 0, target),),
        edges=(([],), ([target],), ([target // 2, target - target // 2],)),
    )


@family("list_mode")
def _list_mode(r: Draw) -> Spec:
    largest = r.bool()
    return Spec(
        name=r.pick(["mode", "most_frequent", "commonest_value"]),
        params="nums: list[int]",
        returns="int | None",
        doc=f"Return the most frequent value in `nums`; on a tie the {'largest' if largest else 'smallest'} of "
        "the tied values; None for an empty list.",
        body=(
            "    if not nums:\n        return None\n    counts = {}\n    for x in nums:\n"
            "        counts[x] = counts.get(x, 0) + 1\n    top = max(counts.values())\n"
            f"    return {'max' if largest else 'min'}(x for x, n in counts.items() if n == top)"
        ),
        gen=lambda: (r.ints(0, 9, -3, 4),),
        edges=(([],), ([2, 1],), ([7],)),
    )


@family("interleave")
def _interleave(r: Draw) -> Spec:
    b_first = r.bool()
    first, second = ("b", "a") if b_first else ("a", "b")
    return Spec(
        name=r.pick(["interleave", "zip_merge", "alternate"]),
        params="a: list[int], b: list[int]",
        returns="list[int]",
        doc=f"Return the elements of `{first}` and `{second}` alternately, starting with `{first}`; when one list "
        "runs out, append the rest of the other.",
        body=(
            "    out = []\n"
            f"    for i in range(max(len(a), len(b))):\n        if i < len({first}):\n            out.append({first}[i])\n"
            f"        if i < len({second}):\n            out.append({second}[i])\n    return out"
        ),
        gen=lambda: (r.ints(0, 5, 0, 9), r.ints(0, 5, 10, 19)),
        edges=(([], []), ([1], []), ([], [2, 3])),
    )


@family("sort_by_remainder")
def _sort_by_remainder(r: Draw) -> Spec:
    m = r.int(2, 5)
    return Spec(
        name=r.pick(["sort_by_remainder", "mod_sort", "bucket_order"]),
        params="nums: list[int]",
        returns="list[int]",
        doc=f"Return `nums` sorted by the remainder of each number divided by {m} (Python's %, so always "
        "0.." + str(m - 1) + "), and by value among equal remainders.",
        body=f"    return sorted(nums, key=lambda x: (x % {m}, x))",
        gen=lambda: (r.ints(0, 9, -10, 20),),
        edges=(([],), ([-1, 1],)),
    )


@family("longest_increasing_run")
def _longest_increasing_run(r: Draw) -> Spec:
    strict = r.bool()
    op = "<" if strict else "<="
    return Spec(
        name=r.pick(["longest_increasing_run", "longest_ascent", "max_rising_streak"]),
        params="nums: list[int]",
        returns="int",
        doc="Return the length of the longest contiguous run of `nums` in which every element is "
        f"{'strictly greater than' if strict else 'greater than or equal to'} the one before; 0 for [].",
        body=(
            "    if not nums:\n        return 0\n    best = cur = 1\n    for a, b in zip(nums, nums[1:]):\n"
            f"        cur = cur + 1 if a {op} b else 1\n        best = max(best, cur)\n    return best"
        ),
        gen=lambda: (r.ints(0, 10, 0, 6),),
        edges=(([],), ([2, 2, 2],), ([3, 2, 1],)),
    )


@family("partition_parity")
def _partition_parity(r: Draw) -> Spec:
    odd_first = r.bool()
    first, second = ("odd", "even") if odd_first else ("even", "odd")
    cond = "x % 2" if odd_first else "x % 2 == 0"
    return Spec(
        name=r.pick(["partition_parity", "evens_and_odds", "split_by_parity"]),
        params="nums: list[int]",
        returns="list[int]",
        doc=f"Return the {first} numbers of `nums` followed by the {second} ones, each group in its original order.",
        body=f"    return [x for x in nums if {cond}] + [x for x in nums if not ({cond})]",
        gen=lambda: (r.ints(0, 10, -9, 9),),
        edges=(([],), ([1, 3],), ([2, 4],)),
    )
