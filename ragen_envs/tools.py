"""An env's actions offered as tools: the ``response_format="tool"`` side of every env.

An env declares its actions once, as :class:`ActionTool` values (``TextEnv.action_tools``). A tool takes one
argument and stands for the action strings of one template: WebShop's ``search`` tool is the template
``search[{}]`` whose ``query`` fills the brackets; a template ``{}`` is an action that is the argument itself
(a move, an answer, code). A call becomes an action string through its tool's template (:func:`read_tool_call`)
and the env judges that string exactly as it judges the same text in the other formats, so rules, rewards and
feedback stay one set. The writer goes the other way (:func:`write_tool_calls`): the oracle, the random agent
and ``action_space.sample()`` write their actions as calls.

The schemas are OpenAI-style function schemas (what ``tokenizer.apply_chat_template(tools=…)``, vLLM and TRL
take); :func:`tool_instructions` lays them out as Qwen2.5's (Hermes-style) chat template does in its system
prompt, so a tool-trained model sees the form it was trained on. The env's instructions already hold them:
render ``info["instructions"]`` as the system message and do not pass ``tools=`` to the template as well.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragen_envs.parsing import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, decode_tool_call, tool_call_bodies

__all__ = [
    "DEFAULT_TOOLS",
    "ActionTool",
    "read_tool_call",
    "read_tool_calls",
    "tool_instructions",
    "tool_schemas",
    "write_tool_calls",
]


@dataclass(frozen=True)
class ActionTool:
    """One kind of action as a tool with one argument; see the module docstring."""

    name: str
    description: str
    parameter: str
    """The argument's name (``"direction"``, ``"query"``)."""
    parameter_description: str
    template: str = "{}"
    """The action string with ``{}`` where the argument goes (``"search[{}]"``)."""
    choices: tuple[str, ...] = ()
    """The argument's values when they are a fixed set (the schema's ``enum``); the env still judges the value."""
    accepts_numbers: bool = False
    """Whether a JSON number is accepted for the argument (written as JSON writes it: ``42``, ``0.5``)."""
    prefix: str = field(init=False, repr=False, compare=False)
    """The template's text before ``{}`` (set from ``template``)."""
    suffix: str = field(init=False, repr=False, compare=False)
    """The template's text after ``{}`` (set from ``template``)."""

    def __post_init__(self) -> None:
        for field_name in ("name", "parameter"):
            value = getattr(self, field_name)
            if not value.replace("_", "").isalnum() or not value.isascii():
                raise ValueError(f"ActionTool {field_name} must be letters, digits and '_', got {value!r}")
        if self.template.count("{}") != 1:
            raise ValueError(f"ActionTool {self.name!r}: template must hold one '{{}}', got {self.template!r}")
        prefix, suffix = self.template.split("{}")
        object.__setattr__(self, "prefix", prefix)  # derived once: read on every call
        object.__setattr__(self, "suffix", suffix)

    @property
    def schema(self) -> dict[str, Any]:
        """The tool as an OpenAI-style function schema (``{"type": "function", "function": {...}}``)."""
        argument: dict[str, Any] = {
            "type": ["string", "number"] if self.accepts_numbers else "string",
            "description": self.parameter_description,
        }
        if self.choices:
            argument["enum"] = list(self.choices)
        parameters = {"type": "object", "properties": {self.parameter: argument}, "required": [self.parameter]}
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": parameters}}  # fmt: skip

    def action(self, arguments: dict[str, Any]) -> tuple[str, str]:
        """``(action string, "")`` for a call's arguments, or ``("", why they are refused)``."""
        value = arguments.get(self.parameter)
        if isinstance(value, str) and len(arguments) == 1:  # the common case, checked first: one string argument
            return f"{self.prefix}{value}{self.suffix}", ""
        kind = "a string or a number" if self.accepts_numbers else "a string"
        if self.parameter not in arguments:
            return "", f"tool {self.name!r} needs the argument {self.parameter!r} ({kind})"
        extra = next((key for key in arguments if key != self.parameter), None)
        if extra is not None:
            return "", f"tool {self.name!r} takes only {self.parameter!r}, not {extra[:40]!r}"
        if self.accepts_numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
            return f"{self.prefix}{json.dumps(value)}{self.suffix}", ""
        return "", f"argument {self.parameter!r} of tool {self.name!r} must be {kind}, got {_json_kind(value)}"

    def argument(self, action: str) -> str | None:
        """The argument that writes ``action`` through this tool's template, or None when it does not fit."""
        prefix, suffix = self.prefix, self.suffix
        fits = (
            len(action) >= len(prefix) + len(suffix)
            and action[: len(prefix)].casefold() == prefix.casefold()
            and action[len(action) - len(suffix) :].casefold() == suffix.casefold()
        )
        return action[len(prefix) : len(action) - len(suffix)] if fits else None


DEFAULT_TOOLS = (
    ActionTool("act", "Play one action.", "action", "The action, written as the rules above describe actions."),
)
"""What an env that declares no tools offers: one tool whose argument is the action string itself."""


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "an object", list: "an array"}.get(type(value), type(value).__name__)


def tool_schemas(tools: Sequence[ActionTool]) -> list[dict[str, Any]]:
    """The tools' function schemas, in order (``info["tools"]`` in the tool format)."""
    return [tool.schema for tool in tools]


def read_tool_call(body: str, tools: Sequence[ActionTool]) -> tuple[str, str]:
    """``(action string, "")`` for one call's JSON body, or ``("", why it is refused)``; never raises."""
    decoded = decode_tool_call(body)
    if isinstance(decoded, str):
        return "", decoded
    name, arguments = decoded
    for tool in tools:
        if tool.name == name:
            return tool.action(arguments)
    import difflib  # only on this error path

    names = [tool.name for tool in tools]
    close = difflib.get_close_matches(name[:40], names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return "", f"unknown tool {name[:40]!r}.{hint} Available: {', '.join(names)}"


def read_tool_calls(answer: str, tools: Sequence[ActionTool], limit: int) -> tuple[list[str], list[str]]:
    """The first ``limit`` calls of a tool-format answer as ``(tokens, errors)``, one entry per call: the action
    string and ``""``, or the call's body as written and why it was refused."""
    tokens, errors = [], []
    for body in tool_call_bodies(answer, limit):
        action, error = read_tool_call(body, tools)
        tokens.append(body if error else action)
        errors.append(error)
    return tokens, errors


def _tool_for(action: str, tools: Sequence[ActionTool]) -> tuple[ActionTool, str]:
    # the tool with the most specific template first: "search[{}]" before a bare "{}"
    for tool in sorted(tools, key=lambda t: -len(t.template)):
        argument = tool.argument(action)
        if argument is not None:
            return tool, argument
    raise ValueError(
        f"no tool of {[t.name for t in tools]} writes the action {action[:60]!r}: the env's action_tools must "
        "cover every action its oracle and candidates play"
    )


def write_tool_calls(actions: Sequence[str], tools: Sequence[ActionTool]) -> str:
    """The tool-call blocks that play ``actions`` in order (the inverse of :func:`read_tool_calls`)."""
    blocks = []
    for action in actions:
        tool, argument = _tool_for(action, tools)
        call = json.dumps({"name": tool.name, "arguments": {tool.parameter: argument}}, ensure_ascii=False)
        call = call.replace("</", "<\\/")  # JSON's escaped "/": an argument cannot close its block early
        blocks.append(f"{TOOL_CALL_OPEN}\n{call}\n{TOOL_CALL_CLOSE}")
    return "\n".join(blocks)


def tool_instructions(tools: Sequence[ActionTool], example_actions: Sequence[str], several: bool) -> str:
    """The system prompt's tool section (it follows the env's rules after a blank line): the schemas in ``<tools>``
    and the call format in the words of Qwen2.5's template, then whether a response may hold several calls and
    an example response."""
    schemas = "\n".join(json.dumps(schema, ensure_ascii=False) for schema in tool_schemas(tools))
    count = (
        "You may make several calls in one response; they are played in order."
        if several
        else "Make exactly one call per response."
    )
    return (
        "# Tools\n\n"
        "You may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{schemas}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        f"{TOOL_CALL_OPEN}{TOOL_CALL_CLOSE} XML tags:\n"
        f'{TOOL_CALL_OPEN}\n{{"name": <function-name>, "arguments": <args-json-object>}}\n{TOOL_CALL_CLOSE}\n\n'
        f"Write your reasoning first, then the call(s). {count} For example:\n"
        f"...\n{write_tool_calls(example_actions, tools)}"
    )
