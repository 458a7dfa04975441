"""Problem families over numbers: digits, divisibility, primes, bases, sequences (see ``problems.py``)."""

from __future__ import annotations

from ragen_envs.code.problems import Draw, Spec, family


@family("digit_sum_base")
def _digit_sum_base(r: Draw) -> Spec:
    base = r.pick([2, 3, 5, 7, 8, 10, 16])
    return Spec(
        name=r.pick(["digit_sum", "sum_of_digits", "digits_total"]),
        params="n: int",
        returns="int",
        doc=f"Return the sum of the digits of the non-negative integer `n` written in base {base}.",
        body=f"    total = 0\n    while n:\n        total += n % {base}\n        n //= {base}\n    return total",
        gen=lambda: (r.int(0, 5000),),
        edges=((0,), (base - 1,), (base,)),
    )


@family("is_prime")
def _is_prime(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["is_prime", "prime_check", "test_primality"]),
        params="n: int",
        returns="bool",
        doc="Return True if the integer `n` is prime (numbers below 2 are not prime).",
        body=(
            "    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n        if n % i == 0:\n"
            "            return False\n        i += 1\n    return True"
        ),
        gen=lambda: (r.int(-5, 3000),),
        edges=((0,), (1,), (2,), (-7,), (7919,), (7921,)),
    )


@family("gcd_list")
def _gcd_list(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["gcd_of_list", "common_divisor", "list_gcd"]),
        params="nums: list[int]",
        returns="int",
        doc="Return the greatest common divisor of the absolute values of `nums` (0 for an empty list or all zeros).",
        prelude="import math",
        body="    g = 0\n    for x in nums:\n        g = math.gcd(g, abs(x))\n    return g",
        gen=lambda: ([r.pick([2, 3, 6]) * r.int(-20, 20) for _ in range(r.int(0, 5))],),
        edges=(([],), ([0, 0],), ([-4, 6],), ([17],)),
    )


@family("lcm_list")
def _lcm_list(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["lcm_of_list", "least_common_multiple", "list_lcm"]),
        params="nums: list[int]",
        returns="int",
        doc="Return the least common multiple of the positive integers in `nums` (1 for an empty list).",
        prelude="import math",
        body="    out = 1\n    for x in nums:\n        out = out * x // math.gcd(out, x)\n    return out",
        gen=lambda: (r.ints(0, 5, 1, 15),),
        edges=(([],), ([1],), ([4, 6],)),
    )


@family("count_divisors")
def _count_divisors(r: Draw) -> Spec:
    proper = r.bool()
    return Spec(
        name=r.pick(["count_divisors", "divisor_count", "num_factors"]),
        params="n: int",
        returns="int",
        doc="Return how many positive divisors the positive integer `n` has"
        + (", not counting n itself." if proper else ", including 1 and n."),
        body=f"    return sum(1 for d in range(1, n + 1) if n % d == 0){' - 1' if proper else ''}",
        gen=lambda: (r.int(1, 400),),
        edges=((1,), (2,), (36,)),
    )


@family("fibonacci_mod")
def _fibonacci_mod(r: Draw) -> Spec:
    m = r.pick([7, 10, 97, 1000, 1_000_007])
    a0, a1 = r.pick([(0, 1), (1, 1), (2, 1)])
    return Spec(
        name=r.pick(["fib_mod", "fibonacci_mod", "nth_term_mod"]),
        params="n: int",
        returns="int",
        doc=f"A sequence starts with a(0) = {a0}, a(1) = {a1}, and a(k) = a(k-1) + a(k-2). Return a(n) modulo {m} "
        "for n ≥ 0 (n can be up to 10^5).",
        body=f"    a, b = {a0}, {a1}\n    for _ in range(n):\n        a, b = b, a + b\n    return a % {m}",
        gen=lambda: (r.int(0, 300),),
        edges=((0,), (1,), (2,), (10000,)),
    )


@family("collatz")
def _collatz(r: Draw) -> Spec:
    mult = r.pick([3, 5]) if r.bool(0.3) else 3
    limit = 1000
    return Spec(
        name=r.pick(["collatz_steps", "steps_to_one", "hailstone_length"]),
        params="n: int",
        returns="int",
        doc=f"Starting from the positive integer `n`, repeatedly halve even numbers and map odd ones x to "
        f"{mult}·x + 1. Return the number of steps to reach 1, or -1 if 1 is not reached within {limit} steps.",
        body=(
            f"    steps = 0\n    while n != 1:\n        if steps >= {limit}:\n            return -1\n"
            f"        n = n // 2 if n % 2 == 0 else {mult} * n + 1\n        steps += 1\n    return steps"
        ),
        gen=lambda: (r.int(1, 200),),
        edges=((1,), (2,), (27,)),
    )


@family("sum_multiples")
def _sum_multiples(r: Draw) -> Spec:
    a, b = r.pick([(3, 5), (2, 7), (4, 6), (3, 7), (5, 11)])
    return Spec(
        name=r.pick(["sum_of_multiples", "multiples_total", "add_multiples"]),
        params="limit: int",
        returns="int",
        doc=f"Return the sum of all positive integers below `limit` that are multiples of {a} or {b} (or both).",
        body=f"    return sum(x for x in range(1, limit) if x % {a} == 0 or x % {b} == 0)",
        gen=lambda: (r.int(0, 500),),
        edges=((0,), (1,), (a,), (a * b + 1,)),
    )


@family("to_base")
def _to_base(r: Draw) -> Spec:
    base = r.pick([2, 3, 5, 7, 8, 16])
    return Spec(
        name=r.pick([f"to_base_{base}", "convert_base", "in_base"]),
        params="n: int",
        returns="str",
        doc=f"Write the integer `n` in base {base} using digits 0-9 then lower-case a-f, with a leading '-' for "
        "negative numbers; 0 is '0'.",
        body=(
            "    if n == 0:\n        return '0'\n    digits = '0123456789abcdef'\n    sign = '-' if n < 0 else ''\n"
            f"    n = abs(n)\n    out = ''\n    while n:\n        out = digits[n % {base}] + out\n        n //= {base}\n"
            "    return sign + out"
        ),
        gen=lambda: (r.int(-300, 3000),),
        edges=((0,), (-1,), (base,), (base - 1,)),
    )


@family("from_roman")
def _from_roman(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["roman_to_int", "parse_roman", "from_roman"]),
        params="numeral: str",
        returns="int",
        doc="Return the value of a valid Roman numeral (I, V, X, L, C, D, M; subtractive pairs like IV, XC).",
        body=(
            "    values = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}\n    total = 0\n"
            "    for i, ch in enumerate(numeral):\n        v = values[ch]\n"
            "        if i + 1 < len(numeral) and values[numeral[i + 1]] > v:\n            total -= v\n"
            "        else:\n            total += v\n    return total"
        ),
        gen=lambda: (_roman(r.int(1, 3999)),),
        edges=(("I",), ("MCMXCIV",), ("MMMCMXCIX",), ("XLIV",)),
    )


def _roman(n: int) -> str:
    pairs = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
             (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))  # fmt: skip
    out = ""
    for value, sym in pairs:
        while n >= value:
            out += sym
            n -= value
    return out


@family("to_roman")
def _to_roman(r: Draw) -> Spec:
    lower = r.bool(0.3)
    return Spec(
        name=r.pick(["int_to_roman", "to_roman", "roman_numeral"]),
        params="n: int",
        returns="str",
        doc=f"Return the Roman numeral for 1 ≤ n ≤ 3999 in {'lower' if lower else 'upper'} case, using "
        "subtractive pairs (4 is IV, 9 is IX, 40 is XL, 90 is XC, 400 is CD, 900 is CM).",
        body=(
            "    pairs = ((1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'), (50, 'L'),\n"
            "             (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I'))\n    out = ''\n"
            "    for value, sym in pairs:\n        while n >= value:\n            out += sym\n            n -= value\n"
            f"    return out{'.lower()' if lower else ''}"
        ),
        gen=lambda: (r.int(1, 3999),),
        edges=((1,), (4,), (3999,), (1994,)),
    )


@family("polygonal")
def _polygonal(r: Draw) -> Spec:
    s = r.int(3, 8)
    return Spec(
        name=r.pick(["polygonal_number", "figurate", "nth_polygonal"]),
        params="n: int",
        returns="int",
        doc=f"Return the n-th {s}-gonal number P(n) = ((s-2)·n² − (s-4)·n) / 2 with s = {s} (P(0) = 0, P(1) = 1).",
        body=f"    return (({s} - 2) * n * n - ({s} - 4) * n) // 2",
        gen=lambda: (r.int(0, 1000),),
        edges=((0,), (1,), (2,)),
    )


@family("popcount_sum")
def _popcount_sum(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["total_set_bits", "popcount_sum", "count_one_bits"]),
        params="n: int",
        returns="int",
        doc="Return the total number of 1 bits in the binary forms of all integers from 0 to `n` inclusive (n ≥ 0).",
        body="    return sum(bin(x).count('1') for x in range(n + 1))",
        gen=lambda: (r.int(0, 2000),),
        edges=((0,), (1,), (1023,)),
    )


@family("digital_root")
def _digital_root(r: Draw) -> Spec:
    multiplicative = r.bool()
    kind = "product" if multiplicative else "sum"
    op = "p *= int(d)" if multiplicative else "p += int(d)"
    return Spec(
        name=r.pick(["digital_root" if not multiplicative else "multiplicative_root", "reduce_digits", "digit_fold"]),
        params="n: int",
        returns="int",
        doc=f"Replace the non-negative integer `n` by the {kind} of its decimal digits until a single digit "
        "remains; return that digit.",
        body=(
            f"    while n >= 10:\n        p = {1 if multiplicative else 0}\n        for d in str(n):\n            {op}\n"
            "        n = p\n    return n"
        ),
        gen=lambda: (r.int(0, 10**7),),
        edges=((0,), (9,), (10,), (999999999,)),
    )


@family("prime_factors")
def _prime_factors(r: Draw) -> Spec:
    distinct = r.bool()
    return Spec(
        name=r.pick(["prime_factors", "factorize", "factor_list"]),
        params="n: int",
        returns="list[int]",
        doc="Return the prime factors of the integer n ≥ 1 in ascending order"
        + (", each prime once." if distinct else ", repeated by multiplicity (12 gives [2, 2, 3]).")
        + " 1 gives [].",
        body=(
            "    out = []\n    d = 2\n    while d * d <= n:\n        while n % d == 0:\n            out.append(d)\n"
            "            n //= d\n        d += 1\n    if n > 1:\n        out.append(n)\n"
            + ("    return sorted(set(out))" if distinct else "    return out")
        ),
        gen=lambda: (r.int(1, 5000),),
        edges=((1,), (2,), (64,), (9973,)),
    )


@family("armstrong")
def _armstrong(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["is_armstrong", "narcissistic", "is_pluperfect"]),
        params="n: int",
        returns="bool",
        doc="Return True if the non-negative integer `n` equals the sum of its decimal digits each raised to "
        "the power of the number of digits (e.g. 153 = 1³ + 5³ + 3³).",
        body="    s = str(n)\n    return n == sum(int(d) ** len(s) for d in s)",
        gen=lambda: (r.pick([r.int(0, 10000), r.pick([153, 370, 371, 407, 1634, 8208, 9474])]),),
        edges=((0,), (10,), (9474,), (9475,)),
    )


@family("perfect_power")
def _perfect_power(r: Draw) -> Spec:
    k = r.pick([2, 3])
    word = "perfect square" if k == 2 else "perfect cube"
    name = r.pick(["is_perfect_square" if k == 2 else "is_perfect_cube", "exact_power", "is_power_of_int"])
    return Spec(
        name=name,
        params="n: int",
        returns="bool",
        doc=f"Return True if the integer `n` is a {word} (the {k}-th power of an integer; "
        + ("negative numbers never are" if k == 2 else "negative cubes count")
        + "). n can be as large as 10^30.",
        body=(
            f"    if n < 0:\n        return {'False' if k == 2 else f'{name}(-n)'}\n"
            f"    lo, hi = 0, 1\n    while hi ** {k} < n:\n        hi *= 2\n    while lo <= hi:\n"
            f"        mid = (lo + hi) // 2\n        v = mid ** {k}\n        if v == n:\n            return True\n"
            "        if v < n:\n            lo = mid + 1\n        else:\n            hi = mid - 1\n    return False"
        ),
        gen=lambda: (r.pick([r.int(-50, 2000), r.int(-40, 40) ** k, r.int(1, 10**9) ** k, r.int(1, 10**9) ** k + 1]),),
        edges=((0,), (1,), (-8,), (10**30,), (10**30 + 1,)),
    )
