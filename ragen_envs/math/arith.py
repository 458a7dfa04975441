"""Exact, safe evaluation of arithmetic answers: a tokenizer and a recursive-descent parser, no ``eval``.

The grammar is the four operations, unary signs, parentheses and non-negative integer literals::

    expr   := term (("+" | "-") term)*
    term   := operand (("*" | "/") operand)*
    operand := ("+" | "-") operand | INTEGER | "(" expr ")"

Values are exact: Python ints while every division so far was exact, ``fractions.Fraction`` after that.
Model output is hostile input, so every resource is bounded *by rule*, before any work is done:

- at most ``MAX_EXPRESSION_CHARS`` characters and ``MAX_TOKENS`` tokens (a megabyte of text is refused by
  its length, not parsed);
- at most ``MAX_DEPTH`` nested parentheses or signs (no deep recursion);
- integer literals of at most ``MAX_LITERAL_DIGITS`` digits, intermediate values of at most ``MAX_BITS``
  bits in numerator and denominator;
- no exponentiation at all: ``9**9**9**9`` is a syntax error (``*`` followed by ``*``), so it costs a few
  microseconds instead of the lifetime of the machine; division by zero is an error, not an exception
  that escapes.

Every failure raises :class:`ExpressionError` (a ``ValueError``); callers that score model output catch it.
"""

from __future__ import annotations

import re
from fractions import Fraction

MAX_EXPRESSION_CHARS = 512
MAX_TOKENS = 256
MAX_DEPTH = 32
MAX_LITERAL_DIGITS = 12
MAX_BITS = 1024

Number = int | Fraction

# Symbols models write for the four operations: ×, ·, x for times; ÷, : for divided by; Unicode minus/dashes.
_ALIASES = str.maketrans({"×": "*", "·": "*", "x": "*", "X": "*", "÷": "/", ":": "/", "−": "-", "–": "-", "—": "-"})
_TOKEN = re.compile(r"\d+|\S")
_OPERATORS = frozenset("+-*/")


class ExpressionError(ValueError):
    """The text is not an arithmetic expression this module accepts (the message says why)."""


def _too_big(value: Number) -> bool:
    if isinstance(value, int):
        return value.bit_length() > MAX_BITS
    return value.numerator.bit_length() > MAX_BITS or value.denominator.bit_length() > MAX_BITS


class _Parser:
    """Recursive descent over a token list that ends with a ``None`` sentinel (no bounds checks needed)."""

    __slots__ = ("tokens", "pos", "literals")

    def __init__(self, tokens: list[str | None]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.literals: list[int] = []

    def expr(self, depth: int) -> Number:
        value = self.term(depth)
        tokens = self.tokens
        while (token := tokens[self.pos]) == "+" or token == "-":
            self.pos += 1
            right = self.term(depth)
            value = value + right if token == "+" else value - right
        return value

    def term(self, depth: int) -> Number:
        value = self.operand(depth)
        tokens = self.tokens
        while (token := tokens[self.pos]) == "*" or token == "/":
            self.pos += 1
            right = self.operand(depth)
            if token == "*":
                value = value * right
                if _too_big(value):
                    raise ExpressionError("an intermediate value is too large")
            elif right == 0:
                raise ExpressionError("division by zero")
            elif isinstance(value, int) and isinstance(right, int) and value % right == 0:
                value = value // right
            else:
                value = Fraction(value, right)
                if _too_big(value):
                    raise ExpressionError("an intermediate value is too large")
        return value

    def operand(self, depth: int) -> Number:
        """A signed operand: ``("+" | "-") operand | INTEGER | "(" expr ")"``."""
        token = self.tokens[self.pos]
        if token is None:
            raise ExpressionError("the expression ends too early")
        self.pos += 1
        if token.isdigit() and token.isascii():
            if len(token) > MAX_LITERAL_DIGITS:
                raise ExpressionError(f"a number has more than {MAX_LITERAL_DIGITS} digits")
            literal = int(token)
            self.literals.append(literal)
            return literal
        if token == "(" or token == "-" or token == "+":
            if depth >= MAX_DEPTH:
                raise ExpressionError(f"more than {MAX_DEPTH} nested signs or parentheses")
            if token == "(":
                value = self.expr(depth + 1)
                if self.tokens[self.pos] != ")":
                    raise ExpressionError("unbalanced parentheses")
                self.pos += 1
                return value
            value = self.operand(depth + 1)
            return -value if token == "-" else value
        if token in _OPERATORS or token == ")":
            raise ExpressionError(f"unexpected {token!r}")
        raise ExpressionError(f"{token[:1]!r} is not allowed (only digits, + - * / and parentheses)")


def evaluate(text: str) -> tuple[Number, list[int]]:
    """Evaluate ``text`` exactly; return (value, the integer literals in order of appearance).

    A trailing ``= <integer>`` (the value the writer claims) is accepted and ignored: the left side is judged.
    Raises :class:`ExpressionError` for anything else, including non-string input.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"expected text, got {type(text).__name__}")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"longer than {MAX_EXPRESSION_CHARS} characters")
    text = text.translate(_ALIASES)
    if "=" in text:
        text, _, claimed = text.partition("=")
        claimed = claimed.strip()
        if not (claimed.isdigit() and claimed.isascii()):
            raise ExpressionError("only 'expression = number' may contain '='")
    tokens: list[str | None] = _TOKEN.findall(text)
    if not tokens:
        raise ExpressionError("empty expression")
    if len(tokens) > MAX_TOKENS:
        raise ExpressionError(f"more than {MAX_TOKENS} tokens")
    tokens.append(None)
    parser = _Parser(tokens)
    value = parser.expr(0)
    if parser.pos != len(tokens) - 1:
        token = tokens[parser.pos]
        if token in _OPERATORS or token in "()" or (token.isdigit() and token.isascii()):
            raise ExpressionError(f"unexpected {token!r}")
        raise ExpressionError(f"{token[:1]!r} is not allowed (only digits, + - * / and parentheses)")
    return value, parser.literals
