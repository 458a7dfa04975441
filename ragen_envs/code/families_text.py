"""Problem families over strings (see ``problems.py`` for what a family is)."""

from __future__ import annotations

from ragen_envs.code.problems import LOWER, Draw, Spec, family


@family("reverse_words")
def _reverse_words(r: Draw) -> Spec:
    sep = r.pick([" ", ",", "-", "/"])
    return Spec(
        name=r.pick(["reverse_words", "flip_word_order", "words_backwards"]),
        params="text: str",
        returns="str",
        doc=f"Split `text` on {sep!r} and return the pieces in reverse order, joined again with {sep!r}.",
        body=f"    return {sep!r}.join(reversed(text.split({sep!r})))",
        gen=lambda: (sep.join(r.words(1, 6)),),
        edges=(("",), ("single",), (sep * 2,), (f"a{sep}b",)),
    )


@family("count_vowels")
def _count_vowels(r: Draw) -> Spec:
    vowels = r.pick(["aeiou", "aeiouy"])
    return Spec(
        name=r.pick(["count_vowels", "vowel_count", "num_vowels"]),
        params="text: str",
        returns="int",
        doc=f"Return how many characters of `text` are vowels, where the vowels are the letters {vowels!r} "
        "in either case.",
        body=f"    return sum(1 for ch in text.lower() if ch in {vowels!r})",
        gen=lambda: (r.string(LOWER + LOWER.upper() + " ", 0, 25),),
        edges=(("",), ("YyY",), ("bcd",), ("AEIOU",)),
    )


@family("palindrome")
def _palindrome(r: Draw) -> Spec:
    loose = r.bool()
    rule = (
        "ignoring case and every character that is not a letter or digit"
        if loose
        else "exactly, character by character (case and spaces matter)"
    )
    body = (
        "    cleaned = [ch.lower() for ch in text if ch.isalnum()]\n    return cleaned == cleaned[::-1]"
        if loose
        else "    return text == text[::-1]"
    )

    def gen():
        half = r.string("abcAB ,", 0, 6)
        return (half + r.string("ab", 0, 1) + half[::-1] if r.bool() else r.string("abcAB ,", 0, 10),)

    return Spec(
        name=r.pick(["is_palindrome", "reads_same_backwards", "palindromic"]),
        params="text: str",
        returns="bool",
        doc=f"Return True if `text` reads the same forwards and backwards, {rule}.",
        body=body,
        gen=gen,
        edges=(("",), ("Aa",), ("a, a",), ("ab",)),
    )


@family("caesar")
def _caesar(r: Draw) -> Spec:
    shift = r.int(1, 25)
    return Spec(
        name=r.pick(["caesar_shift", "rotate_letters", "encode_caesar"]),
        params="text: str",
        returns="str",
        doc=f"Shift every letter of `text` {shift} places forward in the alphabet, wrapping from z to a and "
        "keeping its case; other characters stay as they are.",
        body=(
            "    out = []\n    for ch in text:\n"
            "        if 'a' <= ch <= 'z':\n"
            f"            out.append(chr((ord(ch) - 97 + {shift}) % 26 + 97))\n"
            "        elif 'A' <= ch <= 'Z':\n"
            f"            out.append(chr((ord(ch) - 65 + {shift}) % 26 + 65))\n"
            "        else:\n            out.append(ch)\n    return ''.join(out)"
        ),
        gen=lambda: (r.string(LOWER + "XYZ !9", 0, 20),),
        edges=(("",), ("zZ",), ("123 !",)),
    )


@family("run_length")
def _run_length(r: Draw) -> Spec:
    count_first = r.bool()
    piece = "f'{n}{ch}'" if count_first else "f'{ch}{n}'"
    example = "'3a2b'" if count_first else "'a3b2'"
    return Spec(
        name=r.pick(["run_length_encode", "rle", "compress_runs"]),
        params="text: str",
        returns="str",
        doc=f"Run-length encode `text`: each maximal run of one character becomes "
        f"{'the count then the character' if count_first else 'the character then the count'} "
        f"(so 'aaabb' becomes {example}). Counts of 1 are written too.",
        body=(
            "    out = []\n    i = 0\n    while i < len(text):\n        j = i\n"
            "        while j < len(text) and text[j] == text[i]:\n            j += 1\n"
            f"        ch, n = text[i], j - i\n        out.append({piece})\n        i = j\n    return ''.join(out)"
        ),
        gen=lambda: ("".join(r.pick("abc") * r.int(1, 4) for _ in range(r.int(0, 6))),),
        edges=(("",), ("a",), ("aaaaaaaaaaaa",)),
    )


@family("title_case")
def _title_case(r: Draw) -> Spec:
    sep = r.pick([" ", "_", "-"])
    return Spec(
        name=r.pick(["capitalize_words", "title_words", "headline"]),
        params="text: str",
        returns="str",
        doc=f"Words in `text` are separated by {sep!r}. Return the text with the first character of every "
        "word upper-cased and the rest of the word lower-cased, keeping the separators as they are.",
        body=f"    return {sep!r}.join(w[:1].upper() + w[1:].lower() for w in text.split({sep!r}))",
        gen=lambda: (sep.join(w.upper() if r.bool(0.3) else w for w in r.words(1, 5)),),
        edges=(("",), (sep * 3,), ("x",)),
    )


@family("letter_counts")
def _letter_counts(r: Draw) -> Spec:
    minimum = r.int(1, 3)
    return Spec(
        name=r.pick(["letter_counts", "count_letters", "letter_histogram"]),
        params="text: str",
        returns="dict[str, int]",
        doc="Count the letters of `text` case-insensitively (keys are lower-case letters; other characters are "
        f"ignored) and return a dict of the letters that occur at least {minimum} times.",
        body=(
            "    counts = {}\n    for ch in text.lower():\n        if ch.isalpha():\n"
            "            counts[ch] = counts.get(ch, 0) + 1\n"
            f"    return {{k: v for k, v in counts.items() if v >= {minimum}}}"
        ),
        gen=lambda: (r.string("abcdeAB .!", 0, 24),),
        edges=(("",), ("!!!",), ("aAaA",)),
    )


@family("longest_word")
def _longest_word(r: Draw) -> Spec:
    last = r.bool()
    return Spec(
        name=r.pick(["longest_word", "find_longest_word", "widest_word"]),
        params="sentence: str",
        returns="str",
        doc="Return the longest space-separated word of `sentence` (consecutive spaces separate nothing); on a "
        f"tie return the {'last' if last else 'first'} such word; return '' if there are no words.",
        body=(
            "    best = ''\n    for w in sentence.split():\n"
            f"        if len(w) {'>=' if last else '>'} len(best):\n            best = w\n    return best"
        ),
        gen=lambda: (
            "  ".join(r.words(0, 6)) if r.bool(0.2) else " ".join(r.string("abc", 1, 6) for _ in range(r.int(0, 6))),
        ),
        edges=(("",), ("   ",), ("ab cd",)),
    )


@family("dedupe_chars")
def _dedupe_chars(r: Draw) -> Spec:
    keep_case = r.bool()
    rule = "case-sensitively" if keep_case else "case-insensitively (keep the first occurrence as written)"
    key = "ch" if keep_case else "ch.lower()"
    return Spec(
        name=r.pick(["remove_duplicate_chars", "first_occurrences", "unique_chars"]),
        params="text: str",
        returns="str",
        doc=f"Return `text` with every character that already appeared earlier removed, comparing {rule}.",
        body=(
            "    seen = set()\n    out = []\n    for ch in text:\n"
            f"        key = {key}\n        if key not in seen:\n            seen.add(key)\n            out.append(ch)\n"
            "    return ''.join(out)"
        ),
        gen=lambda: (r.string("abcABC d", 0, 16),),
        edges=(("",), ("aA",), ("zzzz",)),
    )


@family("count_substring")
def _count_substring(r: Draw) -> Spec:
    overlap = r.bool()
    pattern = r.pick(["aa", "aba", "ab", "bab", "aaa"])
    body = (
        f"    p = {pattern!r}\n    return sum(1 for i in range(len(text) - len(p) + 1) if text[i:i + len(p)] == p)"
        if overlap
        else f"    return text.count({pattern!r})"
    )
    return Spec(
        name=r.pick(["count_pattern", "pattern_occurrences", "count_matches"]),
        params="text: str",
        returns="int",
        doc=f"Return how many times {pattern!r} occurs in `text`, "
        + ("counting overlapping occurrences." if overlap else "counting non-overlapping occurrences, left to right."),
        body=body,
        gen=lambda: (r.string("ab", 0, 18),),
        edges=(("",), ("aaaaaa",), ("bbbb",)),
    )


@family("anagram")
def _anagram(r: Draw) -> Spec:
    return Spec(
        name=r.pick(["is_anagram", "are_anagrams", "same_letters"]),
        params="a: str, b: str",
        returns="bool",
        doc="Return True if `a` and `b` are anagrams of each other, ignoring spaces and case.",
        body="    norm = lambda s: sorted(s.replace(' ', '').lower())\n    return norm(a) == norm(b)",
        gen=lambda: (lambda w: (w, "".join(r.shuffled(list(w))) if r.bool() else r.string("abcd ", 0, 8)))(
            r.string("abcdA ", 0, 8)
        ),
        edges=(("", ""), ("a", ""), ("Ab", "b a"), ("aab", "abb")),
    )


@family("snake_to_camel")
def _snake_to_camel(r: Draw) -> Spec:
    upper_first = r.bool()
    first = "parts[0].capitalize()" if upper_first else "parts[0].lower()"
    return Spec(
        name=r.pick(["snake_to_camel", "to_camel_case", "camelize"]),
        params="name: str",
        returns="str",
        doc="Convert a snake_case identifier to "
        + (
            "PascalCase (every part capitalized)"
            if upper_first
            else "camelCase (first part lower-case, the rest capitalized)"
        )
        + ". Empty parts (from repeated or edge underscores) are dropped; parts are lower-cased before capitalizing.",
        body=(
            "    parts = [p for p in name.split('_') if p]\n    if not parts:\n        return ''\n"
            f"    return {first} + ''.join(p.capitalize() for p in parts[1:])"
        ),
        gen=lambda: ("_".join(w.upper() if r.bool(0.2) else w for w in r.words(1, 4)),),
        edges=(("",), ("__",), ("_a__b_",), ("x",)),
    )


@family("squeeze_spaces")
def _squeeze_spaces(r: Draw) -> Spec:
    glue = r.pick([" ", "_", "."])
    return Spec(
        name=r.pick(["squeeze_whitespace", "normalize_spaces", "collapse_blanks"]),
        params="text: str",
        returns="str",
        doc=f"Strip leading and trailing whitespace from `text` and replace every run of whitespace inside it "
        f"by a single {glue!r}.",
        body=f"    return {glue!r}.join(text.split())",
        gen=lambda: ("".join(r.pick(["ab", "c", " ", "  ", "\t", "\n", "d"]) for _ in range(r.int(0, 10))),),
        edges=(("",), ("   ",), (" a ",)),
    )


@family("acronym")
def _acronym(r: Draw) -> Spec:
    min_len = r.int(1, 4)
    return Spec(
        name=r.pick(["acronym", "make_acronym", "initials"]),
        params="phrase: str",
        returns="str",
        doc=f"Return the upper-cased first letters of the space-separated words of `phrase` that have at least "
        f"{min_len} characters, in order.",
        body=f"    return ''.join(w[0].upper() for w in phrase.split() if len(w) >= {min_len})",
        gen=lambda: (" ".join(r.string("abcdef", 1, 6) for _ in range(r.int(0, 6))),),
        edges=(("",), ("a bb ccc dddd",)),
    )


@family("mask_vowels")
def _mask_vowels(r: Draw) -> Spec:
    mask = r.pick(["*", "#", "_"])
    return Spec(
        name=r.pick(["mask_vowels", "hide_vowels", "censor_vowels"]),
        params="text: str",
        returns="str",
        doc=f"Return `text` with every vowel (a, e, i, o, u, either case) replaced by {mask!r}.",
        body=f"    return ''.join({mask!r} if ch in 'aeiouAEIOU' else ch for ch in text)",
        gen=lambda: (r.string(LOWER[:10] + "AEI ", 0, 20),),
        edges=(("",), ("AEIOUaeiou",), ("xyz",)),
    )


@family("rotate_string")
def _rotate_string(r: Draw) -> Spec:
    left = r.bool()
    return Spec(
        name=r.pick(["rotate_string", "cycle_text", "shift_chars"]),
        params="text: str, k: int",
        returns="str",
        doc=f"Rotate `text` {'left' if left else 'right'} by `k` positions (k may exceed the length or be 0); "
        "the empty string stays empty.",
        body=(
            "    if not text:\n        return text\n    k %= len(text)\n"
            + ("    return text[k:] + text[:k]" if left else "    return text[len(text) - k:] + text[:len(text) - k]")
        ),
        gen=lambda: (r.string("abcdef", 0, 8), r.int(0, 12)),
        edges=(("", 3), ("abc", 0), ("abc", 3), ("ab", 7)),
    )


@family("most_common_char")
def _most_common_char(r: Draw) -> Spec:
    largest = r.bool()
    return Spec(
        name=r.pick(["most_common_char", "top_character", "mode_char"]),
        params="text: str",
        returns="str",
        doc="Return the character that occurs most often in `text`; on a tie return the "
        f"{'alphabetically largest' if largest else 'alphabetically smallest'} one; '' for empty text.",
        body=(
            "    if not text:\n        return ''\n    counts = {}\n    for ch in text:\n"
            "        counts[ch] = counts.get(ch, 0) + 1\n    top = max(counts.values())\n"
            f"    return {'max' if largest else 'min'}(ch for ch, n in counts.items() if n == top)"
        ),
        gen=lambda: (r.string("abcd", 1, 12),),
        edges=(("",), ("ba",), ("zzaa",)),
    )


@family("word_lengths")
def _word_lengths(r: Draw) -> Spec:
    minimum = r.int(1, 4)
    return Spec(
        name=r.pick(["word_lengths", "lengths_of_words", "measure_words"]),
        params="sentence: str",
        returns="list[int]",
        doc=f"Return the lengths of the whitespace-separated words of `sentence`, in order, skipping words shorter "
        f"than {minimum} characters.",
        body=f"    return [len(w) for w in sentence.split() if len(w) >= {minimum}]",
        gen=lambda: (" ".join(r.string("abc", 1, 6) for _ in range(r.int(0, 7))),),
        edges=(("",), ("a bb ccc",)),
    )
