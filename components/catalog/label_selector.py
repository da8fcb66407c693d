"""Label selectors as the API server parses them: a port of k8s.io/apimachinery ``labels.Parse``.

The GPU Operator's upgrade controller lists pods with the pod selectors of ``driver.upgradePolicy`` (k8s-operator-libs
``pkg/upgrade`` drain_manager.go and pod_manager.go, vendored by gpu-operator v26.7.0): the API server reads each
with ``labels.Parse``, and one it refuses fails every upgrade at its first node. So the config checks a selector by
that parser, token by token, not by a look-alike pattern.

Source: k8s.io/apimachinery v0.32.0 ``pkg/labels/selector.go`` (not in the pinned trees: gpu-operator v26.7.0
vendors only a subset; https://github.com/kubernetes/apimachinery/blob/v0.32.0/pkg/labels/selector.go): the
``Lexer`` (``Lex``, ``scanSpecialSymbol``, ``scanIDOrKeyword``; whitespace is `` \\t\\r\\n``, the special
symbols ``=!(),><``, and a 0 byte ends the input), the ``Parser`` (``parse``, ``parseRequirement``,
``parseKeyAndInferOperator``, ``parseOperator``, ``parseValues``, ``parseIdentifiersList``, ``parseExactValue``;
``in`` and ``notin`` are identifiers where a value is expected) and ``NewRequirement`` (a key is a qualified
name, each value a label value, ``Gt``/``Lt`` values int64 integers). Where the Go code has a quirk the port
keeps it: ``app in ()`` and ``app=`` select the empty value and are valid. One addition: a control character
(the 0 byte Go's lexer stops at included) is refused outright, since the text after it would be silently lost.
"""

from __future__ import annotations

from typing import Final

from components.catalog.kubernetes import label_key_problem, label_value_problem

#: The grammar's source, for messages.
SOURCE: Final = "k8s.io/apimachinery labels.Parse"

_WHITESPACE = " \t\r\n"
_SPECIAL = "=!(),><"
_TOKENS = {")", ",", "!", "==", "=", ">", "in", "<", "!=", "notin", "("}
_IDENTIFIER = "identifier"
_END = "end of string"
_INT64 = (-(2**63), 2**63 - 1)


class LabelSelectorError(ValueError):
    """A selector ``labels.Parse`` refuses; the message is close to the parser's own."""


def _lex(text: str) -> list[tuple[str, str]]:
    """``(token, literal)`` pairs; a keyword's or symbol's token is its own text, else ``identifier``."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while True:
        while position < len(text) and text[position] in _WHITESPACE:
            position += 1
        if position >= len(text):
            tokens.append((_END, ""))
            return tokens
        if text[position] in _SPECIAL:
            buffer, last = "", ""
            while position < len(text) and text[position] in _SPECIAL:
                candidate = buffer + text[position]
                if candidate in _TOKENS:
                    buffer = last = candidate
                    position += 1
                elif last:
                    break
                else:
                    buffer = candidate
                    position += 1
            if not last:
                raise LabelSelectorError(f"error expected: keyword found '{buffer}'")
            tokens.append((last, last))
            continue
        start = position
        while position < len(text) and text[position] not in _SPECIAL and text[position] not in _WHITESPACE:
            position += 1
        word = text[start:position]
        tokens.append((word if word in _TOKENS else _IDENTIFIER, word))


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.position = 0

    def lookahead(self, values: bool = True) -> tuple[str, str]:
        token, literal = self.tokens[self.position]
        return (_IDENTIFIER if values and token in ("in", "notin") else token), literal

    def consume(self, values: bool = True) -> tuple[str, str]:
        found = self.lookahead(values)
        self.position = min(self.position + 1, len(self.tokens) - 1)
        return found

    def parse(self) -> None:
        while True:
            token, literal = self.lookahead()
            if token == _END:
                return
            if token not in (_IDENTIFIER, "!"):
                raise LabelSelectorError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            self.requirement()
            token, literal = self.consume()
            if token == _END:
                return
            if token != ",":
                raise LabelSelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            following, literal = self.lookahead()
            if following not in (_IDENTIFIER, "!"):
                raise LabelSelectorError(f"found '{literal}', expected: identifier after ','")

    def requirement(self) -> None:
        token, key = self.consume()
        negated = token == "!"
        if negated:
            token, key = self.consume()
        if token != _IDENTIFIER:
            raise LabelSelectorError(f"found '{key}', expected: identifier")
        _check(label_key_problem(key))
        following, _ = self.lookahead()
        if negated or following in (_END, ","):
            return  # Exists / DoesNotExist: no values
        operator, literal = self.consume(values=False)
        if operator in ("in", "notin"):
            values = self.values()
        elif operator in ("=", "==", "!=", ">", "<"):
            values = [self.exact_value()]
        else:
            raise LabelSelectorError(f"found '{literal}', expected: in, notin, =, ==, !=, gt, lt")
        if operator in (">", "<"):
            for value in values:
                if not _is_int64(value):
                    raise LabelSelectorError(f"for 'Gt', 'Lt' operators, the value must be an integer, got '{value}'")
        for value in values:
            _check(label_value_problem(value))

    def values(self) -> list[str]:
        token, literal = self.consume()
        if token != "(":
            raise LabelSelectorError(f"found '{literal}' expected: '('")
        token, literal = self.lookahead()
        if token == ")":
            self.consume()
            return [""]
        if token not in (_IDENTIFIER, ","):
            raise LabelSelectorError(f"found '{literal}', expected: ',', ')' or identifier")
        found = self.identifiers()
        token, _ = self.consume()
        if token != ")":
            raise LabelSelectorError(f"found '{literal}', expected: ')'")
        return found

    def identifiers(self) -> list[str]:
        found: list[str] = []
        while True:
            token, literal = self.consume()
            if token == _IDENTIFIER:
                found.append(literal)
                following, literal = self.lookahead()
                if following == ",":
                    continue
                if following == ")":
                    return found
                raise LabelSelectorError(f"found '{literal}', expected: ',' or ')'")
            if token == ",":
                if not found:
                    found.append("")
                following, _ = self.lookahead()
                if following == ")":
                    found.append("")
                    return found
                if following == ",":
                    self.consume()
                    found.append("")
                continue
            raise LabelSelectorError(f"found '{literal}', expected: ',', or identifier")

    def exact_value(self) -> str:
        token, _ = self.lookahead()
        if token in (_END, ","):
            return ""
        token, literal = self.consume()
        if token == _IDENTIFIER:
            return literal
        raise LabelSelectorError(f"found '{literal}', expected: identifier")


def _is_int64(text: str) -> bool:
    """Go ``strconv.ParseInt(text, 10, 64)``: an optional sign and decimal digits, in int64."""
    digits = text[1:] if text[:1] in "+-" else text
    return bool(digits) and digits.isascii() and digits.isdigit() and _INT64[0] <= int(text) <= _INT64[1]


def _check(problem: str | None) -> None:
    if problem:
        raise LabelSelectorError(problem)


def parse_label_selector(selector: str) -> None:
    """Raise ``LabelSelectorError`` where ``labels.Parse`` refuses ``selector``; the empty selector selects all."""
    if any(not c.isprintable() and c not in _WHITESPACE for c in selector):
        raise LabelSelectorError("it holds a control character")
    _Parser(_lex(selector)).parse()


def label_selector_problem(selector: str) -> str | None:
    """Why ``selector`` is not a label selector the API server parses (``labels.Parse``), or None; empty is valid."""
    try:
        parse_label_selector(selector)
    except LabelSelectorError as error:
        return (
            f"{selector[:100]!r} is not a Kubernetes label selector ({error}; {SOURCE}); write requirements such as "
            "app=trainer, tier!=batch, team in (ml,cv) or !preemptible, separated by commas"
        )
    return None
