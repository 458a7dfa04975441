"""Answer extraction and comparison shared by the math envs: tolerant about form, strict about value.

What a model writes as a final answer is read as one number when it holds exactly one: ``1,250``,
``$1250.00``, ``12.5%``, ``3/4``, ``-2``, ``2 1/2``, ``\\frac{3}{4}``, ``\\boxed{42}``, ``x = 42`` and a unit
after the number (``42 apples``, ``12 km/h``, ``30 m^2``) all parse. The value then has to be *equal*,
exactly, as rationals: ``0.5`` = ``1/2`` = ``0.50``, ``12`` ≠ ``12.5``, and ``12.5%`` is the number 12.5
(the percent sign is read as a unit, never as a hidden division by 100). Text with two or more numbers
(``12 or 13``) is ambiguous and matches nothing.

A reference answer that is not a number (``\\frac{\\sqrt{3}}{2}``, ``(1, 2)``, ``x^2+1``) is compared as
text after the normalization RAGEN applies to MetaMathQA (lower case, no whitespace) plus LaTeX noise removal.

Reference *solutions* from datasets carry their final answer by convention: GSM8K ``#### 42``,
MetaMathQA ``The answer is: 42``, MATH ``\\boxed{42}``; :func:`final_answer_text` finds it.

Everything here is linear-time over bounded input and never raises on any string.
"""

from __future__ import annotations

import re
from fractions import Fraction

MAX_ANSWER_CHARS = 1000
MAX_DIGITS = 40
MAX_SOLUTION_CHARS = 1 << 20

_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*([^{}]{0,80})\}\s*\{\s*([^{}]{0,80})\}")
_TEXT_CMD = re.compile(r"\\(?:text|textbf|mathrm|mbox|operatorname)\s*\{([^{}]{0,200})\}")
_UNIT_POWER = re.compile(r"(?<=[A-Za-z])\s*\^\s*\{?\s*\d{1,2}\s*\}?|[²³]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMBER = re.compile(r"(-\s*)?(\d+(?:\.\d+)?|\.\d+)(?:\s*/\s*(\d+(?:\.\d+)?))?")
_LATEX_NOISE = ("\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\ ", "\\$", "$", "\\%", "%", "^\\circ", "°")
_DASHES = str.maketrans({"−": "-", "–": "-", "—": "-", "\u00a0": " "})


def extract_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{…}`` (or ``\\fbox{…}``) in ``text``, braces balanced; else ``None``."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    i = text.find("{", start)
    if i < 0 or text[start:i].rstrip() not in ("\\boxed", "\\fbox"):
        rest = text[start:].split(None, 1)  # "\boxed 5"
        return rest[1].split(None, 1)[0].rstrip("$.") if len(rest) == 2 else None
    depth, begin = 0, i + 1
    for j in range(i, len(text)):
        ch = text[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[begin:j].strip()
    return None


def final_answer_text(solution: str) -> str:
    """The final answer a reference solution states: after ``####``, after "The answer is", in ``\\boxed{}``,
    or else the whole (stripped) text."""
    if not isinstance(solution, str):
        return ""
    solution = solution[-MAX_SOLUTION_CHARS:]
    at = solution.rfind("####")
    if at >= 0:
        lines = solution[at + 4 :].strip().splitlines()
        return lines[0].strip() if lines else ""
    lowered = solution.lower()
    at = lowered.rfind("the answer is")
    if at >= 0:
        rest = solution[at + len("the answer is") :].strip().lstrip(":").strip()
        boxed = extract_boxed(rest)
        if boxed is not None:
            return boxed
        lines = rest.splitlines()
        answer = lines[0].strip() if lines else ""
        return answer[:-1].rstrip() if answer.endswith(".") else answer
    boxed = extract_boxed(solution)
    if boxed is not None:
        return boxed
    return solution.strip()


def _clean(text: str) -> str:
    """Remove LaTeX wrapping and noise that never changes the value."""
    boxed = extract_boxed(text)
    if boxed is not None:
        text = boxed
    text = text.translate(_DASHES)
    text = _TEXT_CMD.sub(r" \1", text)
    text = _FRAC.sub(r"(\1)/(\2)", text)
    for noise in _LATEX_NOISE:
        if noise in text:
            text = text.replace(noise, " ")
    return text


def _to_fraction(digits: str) -> Fraction | None:
    if len(digits) > MAX_DIGITS:
        return None
    return Fraction(digits)


def parse_number(text: object) -> Fraction | None:
    """The one number ``text`` states, exactly, or ``None`` (no number, several numbers, too long)."""
    if not isinstance(text, str) or len(text) > MAX_ANSWER_CHARS:
        return None
    text = _clean(text)
    if "=" in text:
        text = text.rsplit("=", 1)[1]
    text = _UNIT_POWER.sub(" ", text)
    text = _THOUSANDS.sub("", text)
    text = text.replace("(", " ").replace(")", " ")
    matches = _NUMBER.findall(text)
    if len(matches) == 2:  # a mixed number "2 1/2"
        (sign, whole, none), (sign2, num, den) = matches
        if none == "" and sign2 == "" and den != "" and whole.isdigit() and num.isdigit() and den.isdigit():
            whole_value, part = _to_fraction(whole), _to_fraction(num)
            denominator = _to_fraction(den)
            if None in (whole_value, part, denominator) or denominator == 0 or part >= denominator:
                return None
            value = whole_value + part / denominator
            return -value if sign else value
        return None
    if len(matches) != 1:
        return None
    sign, numerator, denominator = matches[0]
    value = _to_fraction(numerator)
    if value is None:
        return None
    if denominator:
        divisor = _to_fraction(denominator)
        if divisor is None or divisor == 0:
            return None
        value /= divisor
    return -value if sign else value


def normalize_text(text: str) -> str:
    """Text form used when an answer is not a number: lower case, no whitespace, no LaTeX wrapping."""
    if not isinstance(text, str) or len(text) > MAX_ANSWER_CHARS:
        return ""
    text = _clean(text).replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = "".join(text.lower().split())
    return text[:-1] if text.endswith(".") else text


def answers_match(given: str, reference: str, reference_value: Fraction | None = None) -> bool:
    """True when ``given`` states the reference answer: equal value if the reference is a number, else equal
    normalized text. ``reference_value`` may be passed to skip re-parsing the reference."""
    if reference_value is None:
        reference_value = parse_number(reference)
    if reference_value is not None:
        return parse_number(given) == reference_value
    wanted = normalize_text(reference)
    return bool(wanted) and normalize_text(given) == wanted


def format_number(value: Fraction | int) -> str:
    """Shortest exact writing: ``42``, ``12.5``, ``-0.125`` for terminating decimals (≤ 6 places), else ``7/3``."""
    if type(value) is int:
        return str(value)
    if type(value) is not Fraction:
        value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    places = max(twos, fives)
    if den == 1 and places <= 6:
        scaled = abs(value.numerator) * 10**places // value.denominator
        text = f"{scaled // 10**places}.{scaled % 10**places:0{places}d}"
        return f"-{text}" if value < 0 else text
    return f"{value.numerator}/{value.denominator}"
