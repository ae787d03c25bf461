"""The JSON schema of a reply model, as backends send it or turn it into a grammar."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from debate.models._base import ModelSettings, ReplySchema

MAX_ENUM_RANGE = 100
"""Widest integer range spelled out as an ``enum`` (a 1-10 score has ten values)."""


@lru_cache(maxsize=1024)
def _schema_text(schema: ReplySchema) -> str:
    return json.dumps(schema.model_json_schema())


def json_schema_of(schema: ReplySchema) -> dict[str, Any]:
    """The JSON schema sent to a provider or turned into a grammar (a fresh copy).

    Generating a schema costs pydantic a few milliseconds, which is most of this package's
    CPU time per call when it is done every call; it is generated once per model class.
    """
    value: dict[str, Any] = json.loads(_schema_text(schema))
    return value


def schema_bytes(schema: ReplySchema) -> int:
    """The UTF-8 size of the schema's JSON text (a budget's bound counts it as prompt)."""
    return len(_schema_text(schema).encode("utf-8"))


@lru_cache(maxsize=1024)
def _sent_text(schema: ReplySchema) -> str:
    return json.dumps(integer_enums(json_schema_of(schema)))


def sent_schema(schema: ReplySchema) -> dict[str, Any]:
    """The schema a backend sends or compiles: :func:`integer_enums` of it (a fresh copy).

    Built once per model class, like :func:`json_schema_of`, rather than walked again on
    every call; a fresh copy, since a backend may change it (OpenAI's strict mode does).
    """
    value: dict[str, Any] = json.loads(_sent_text(schema))
    return value


def integer_enums(schema: Any) -> Any:
    """The schema with every small integer range spelled out as an ``enum``.

    llama.cpp's JSON-schema-to-grammar converter (in-process and in llama-cpp-python's
    server) does not enforce ``minimum``/``maximum`` on integers: a small model then writes
    100 for a 1-10 score, or digits until it runs out of tokens. An ``enum`` of the allowed
    values is forced by the grammar. ``type: integer`` is kept beside the enum: the
    converter reads the enum first, and OpenAI's strict mode wants a type on every node and
    accepts an enum of integers (it is also spared ``minimum``/``maximum``, which older
    strict-mode models refused).
    """
    if isinstance(schema, dict):
        out = {k: integer_enums(v) for k, v in schema.items()}
        low, high = out.get("minimum"), out.get("maximum")
        if (
            out.get("type") == "integer"
            and isinstance(low, int)
            and isinstance(high, int)
            and 0 <= high - low <= MAX_ENUM_RANGE
        ):
            out = {k: v for k, v in out.items() if k not in ("minimum", "maximum")}
            out["enum"] = list(range(low, high + 1))
        return out
    if isinstance(schema, list):
        return [integer_enums(v) for v in schema]
    return schema


SPACE = 'sp ::= " "?'
"""At most one space between tokens of the JSON text (one byte of the bound)."""

CHAR_RULES = (
    # one UTF-8 byte: printable ASCII but the quote and the backslash
    r"c1 ::= [\x20-\x21\x23-\x5B\x5D-\x7E]",
    # two bytes: a two-character escape, or U+0080-U+07FF
    r'c2 ::= "\\" ["\\/bfnrt] | [\u0080-\u07FF]',
    r"c3 ::= [\u0800-\uFFFF]",
    r"c4 ::= [\U00010000-\U0010FFFF]",
)
"""A string's characters by their size in the JSON text, so a bound can count bytes."""


class UnsupportedSchema(ValueError):
    """A construct :func:`reply_grammar` does not turn into a bounded grammar."""


@dataclass(frozen=True)
class ReplyGrammar:
    """A reply schema as a llama.cpp grammar (GBNF), with the longest reply it allows."""

    gbnf: str
    max_bytes: int | None
    """UTF-8 bytes of the longest JSON text the grammar accepts; None when unbounded."""

    @property
    def max_tokens(self) -> int | None:
        """A ``max_tokens`` any reply the grammar allows fits in (None when unbounded).

        Every token a grammar lets through writes at least one byte, so a reply of ``n``
        bytes takes at most ``n`` tokens; one more, because llama-cpp-python reports a reply
        that reaches ``max_tokens`` as cut off before it samples the end-of-text token.
        """
        return None if self.max_bytes is None else self.max_bytes + 1


def _literal(text: str) -> str:
    """A GBNF string literal matching exactly ``text``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


class _Builder:
    """Builds the rules of one grammar and the longest text each rule matches, in bytes.

    A string bounded by ``maxLength`` is bounded in UTF-8 bytes of its JSON text: the rule
    ``b{k}`` is "at most ``k`` more bytes", each character spending its size (``c1``-``c4``
    above). Every bounded string of the grammar shares the ``b{k}`` rules, and each is a
    tail call, so llama.cpp's grammar stacks stay shallow however long the bound. For plain
    ASCII text the byte bound is the schema's character limit; other text gets fewer
    characters (never more), so every reply the grammar allows validates.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = schema.get("$defs", {})
        self.rules: dict[str, str] = {}
        self.sizes: dict[str, int | None] = {}
        self.visiting: set[str] = set()
        self.longest_string = 0

    def value(self, node: dict[str, Any], name: str) -> tuple[str, int | None]:
        """An expression for ``node``, and its longest text in bytes (None: unbounded)."""
        if "$ref" in node:
            return self.ref(str(node["$ref"]))
        if "enum" in node or "const" in node:
            values = node["enum"] if "enum" in node else [node["const"]]
            texts = [json.dumps(v, ensure_ascii=False) for v in values]
            body = " | ".join(_literal(t) for t in texts)
            return f"( {body} )", max(len(t.encode()) for t in texts)
        if "anyOf" in node:  # a nullable field: one of the alternatives, the longest bounds it
            found = [self.value(o, f"{name}-{i}") for i, o in enumerate(node["anyOf"])]
            sizes = [size for _, size in found]
            longest = None if None in sizes else max(s for s in sizes if s is not None)
            return "( " + " | ".join(expr for expr, _ in found) + " )", longest
        kind = node.get("type")
        if kind == "null":
            return '"null"', 4
        if kind == "object":
            return self.object(node, name)
        if kind == "string" and not {"pattern", "format"} & set(node):
            return self.string(node)
        if kind == "boolean":
            return '( "true" | "false" )', 5
        if kind == "array":
            return self.array(node, name)
        raise UnsupportedSchema(f"no bounded grammar for {kind or sorted(node)}")

    def ref(self, ref: str) -> tuple[str, int | None]:
        name = ref.removeprefix("#/$defs/")
        key = "def-" + "".join(ch if ch.isalnum() else "-" for ch in name)
        if key in self.visiting:
            raise UnsupportedSchema(f"recursive schema at {ref}")
        if key not in self.sizes:
            self.visiting.add(key)
            expr, size = self.value(self.defs[name], key)
            self.visiting.discard(key)
            if expr != key:
                self.rules[key] = expr
            self.sizes[key] = size
        return key, self.sizes[key]

    def object(self, node: dict[str, Any], name: str) -> tuple[str, int | None]:
        props: dict[str, Any] = node.get("properties", {})
        if node.get("additionalProperties", False) is not False or not props:
            raise UnsupportedSchema("an object without a fixed set of properties")
        parts: list[str] = []
        sizes: list[int | None] = []
        for i, (key, sub) in enumerate(props.items()):
            expr, size = self.value(sub, f"{name}-{i}")
            key_text = json.dumps(key, ensure_ascii=False)
            # every property is written, required or not: a complete object validates
            parts.append(f'{_literal(key_text)} sp ":" sp {expr} sp')
            sizes.append(None if size is None else len(key_text.encode()) + 4 + size)
        body = '"{" sp ' + ' "," sp '.join(parts) + ' "}"'
        total = _sum(sizes, 3 + 2 * (len(parts) - 1))  # { sp } and each "," sp
        self.rules[name] = body
        self.sizes[name] = total
        return name, total

    def string(self, node: dict[str, Any]) -> tuple[str, int | None]:
        low = int(node.get("minLength", 0))
        high = node.get("maxLength")
        if high is None:
            return '"\\"" ( c1 | c2 | c3 | c4 )* "\\""', None
        high = int(high)
        if low > 1 or high < max(low, 1):
            raise UnsupportedSchema(f"a string of {low} to {high} characters")
        self.longest_string = max(self.longest_string, high)
        body = _bytes_alternatives(high) if low == 1 else f"b{high}"
        return f'"\\"" {body} "\\""', high + 2

    def array(self, node: dict[str, Any], name: str) -> tuple[str, int | None]:
        items, high, low = node.get("items"), node.get("maxItems"), node.get("minItems", 0)
        if not isinstance(items, dict) or high is None or low > 1 or int(high) < 1:
            raise UnsupportedSchema("an array without items, or without maxItems")
        expr, item = self.value(items, f"{name}-item")
        high = int(high)
        tail = ""
        for _ in range(high - 1):
            tail = f'( "," sp {expr} sp {tail} )?'
        first = f"{expr} sp {tail}"
        body = f'"[" sp {first} "]"' if low == 1 else f'"[" sp ( {first} )? "]"'
        size = None if item is None else 3 + high * (item + 1) + (high - 1) * 2
        self.rules[name] = body
        self.sizes[name] = size
        return name, size

    def text(self, root: str) -> str:
        lines = [f"root ::= {root}", SPACE, *CHAR_RULES]
        lines += [f"b{k} ::= {_bytes_alternatives(k)}?" for k in range(1, self.longest_string + 1)]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()]
        return "\n".join(lines) + "\n"


def _bytes_alternatives(k: int) -> str:
    """One character of at most ``k`` bytes, then at most ``k`` minus its size more."""
    alts = [f"c{n}" + (f" b{k - n}" if k > n else "") for n in range(1, 5) if n <= k]
    return "( " + " | ".join(alts) + " )"


def _sum(sizes: list[int | None], extra: int) -> int | None:
    """``extra`` plus every size, or None if any is unbounded."""
    total = extra
    for size in sizes:
        if size is None:
            return None
        total += size
    return total


@lru_cache(maxsize=1024)
def reply_grammar(schema: ReplySchema) -> ReplyGrammar:
    """The grammar of ``schema``'s replies, built once per model class.

    Raises:
        UnsupportedSchema: the schema has a construct without a bounded grammar here (a
            backend then falls back to llama.cpp's own converter, without a bound).
    """
    builder, root, size = _walk(schema)
    return ReplyGrammar(gbnf=builder.text(root), max_bytes=size)


def _walk(schema: ReplySchema) -> tuple[_Builder, str, int | None]:
    """The rules of ``schema``'s grammar, its root and its longest reply in bytes."""
    node = sent_schema(schema)
    builder = _Builder(node)
    root, size = builder.value(node, "reply")
    return builder, root, size


@lru_cache(maxsize=1024)
def reply_max_tokens(schema: ReplySchema) -> int | None:
    """The ``max_tokens`` every reply a grammar allows for ``schema`` fits in, or None.

    None when the schema has an unbounded part (a string without ``maxLength``) or a
    construct :func:`reply_grammar` does not bound. Kept per schema, like the grammar: a
    schema without a bounded grammar would otherwise be walked again on every call. Only the
    bound is built, not the grammar's text: a judge's reply schema is new in nearly every
    debate (its own order of ids), and writing the text was half the cost of the bound.
    """
    try:
        size = _walk(schema)[2]
    except UnsupportedSchema:
        return None
    return ReplyGrammar(gbnf="", max_bytes=size).max_tokens  # the bound alone, no text


FALLBACK_MAX_TOKENS = 1024
"""``max_tokens`` of a call whose reply schema has no bound (a string without a length)."""


def call_max_tokens(settings: ModelSettings, schema: ReplySchema) -> int:
    """The ``max_tokens`` of a call: the caller's, else the bound of its reply schema.

    ``ask`` resolves it before a request goes out; a backend called directly resolves it the
    same way.
    """
    if settings.max_tokens is not None:
        return settings.max_tokens
    return reply_max_tokens(schema) or FALLBACK_MAX_TOKENS
