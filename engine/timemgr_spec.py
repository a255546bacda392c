"""lc0's option-string syntax (utils/optionsdict.cc, OptionsDict::AddSubdictFromString) as the
``TimeManager`` option takes it: ``name``, ``name()``, or ``name(key=value,sub(key=value),…)``.
Values as lc0's lexer reads them: an integer, a float (with ``.``, ``e`` or ``E``), ``true`` /
``false``, or a string (quoted, or a bare identifier)."""

from __future__ import annotations

Spec = int | float | bool | str
Dict = tuple[dict[str, Spec], dict[str, "Dict"]]

_SINGLE = ",()="
_NUMBER_START = "0123456789-."
_NUMBER_CHARS = "+-1234567890.eExX"
_IDENT_PUNCT = "_-./"


def _tokens(text: str) -> list[tuple[str, Spec, int]]:
    """(kind, value, offset) with kind one of , ( ) = num id str."""
    out: list[tuple[str, Spec, int]] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c in _SINGLE:
            out.append((c, c, i))
            i += 1
        elif c in _NUMBER_START:
            j = i
            while j < len(text) and text[j] in _NUMBER_CHARS:
                j += 1
            word = text[i:j]
            try:
                value: Spec = float(word) if any(ch in word for ch in ".eE") else int(word, 10)
            except ValueError:
                raise _error(text, i, "unable to parse number") from None
            out.append(("num", value, i))
            i = j
        elif c in "'\"":
            j = text.find(c, i + 1)
            if j < 0:
                raise _error(text, i, "string is not closed at end of line")
            out.append(("str", text[i + 1 : j], i))
            i = j + 1
        elif c.isalnum() or c == "/":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] in _IDENT_PUNCT):
                j += 1
            out.append(("id", text[i:j], i))
            i = j
        else:
            raise _error(text, i, "unable to parse token")
    return out


def _error(text: str, at: int, why: str) -> ValueError:
    return ValueError(f"TimeManager: unable to parse {text!r} at offset {at} ({why})")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at][0] if self.at < len(self.tokens) else "eof"

    def take(self) -> tuple[str, Spec, int]:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def offset(self) -> int:
        return self.tokens[self.at][2] if self.at < len(self.tokens) else len(self.text)

    def parse_list(self) -> Dict:
        values: dict[str, Spec] = {}
        subdicts: dict[str, Dict] = {}
        while self.peek() in ("id", "str"):
            key = str(self.take()[1])
            if self.peek() == "=":
                self.take()
                if self.peek() not in ("num", "id", "str"):
                    raise _error(self.text, self.offset(), "expected value")
                kind, value, _ = self.take()
                if kind == "id" and value in ("true", "false"):
                    value = value == "true"
                if key in values:
                    raise _error(self.text, self.offset(), f"{key} given twice")
                values[key] = value
            else:
                sub: Dict = ({}, {})
                if self.peek() == "(":
                    self.take()
                    sub = self.parse_list()
                    if self.peek() != ")":
                        raise _error(self.text, self.offset(), "expected )")
                    self.take()
                if key in subdicts:
                    raise _error(self.text, self.offset(), f"{key} given twice")
                subdicts[key] = sub
            if self.peek() != ",":
                break
            self.take()
        return values, subdicts


def parse_spec(text: str) -> tuple[str, dict[str, Spec], dict[str, dict[str, Spec]]]:
    """The one time manager ``text`` names: (name, its key=values, its sub-lists' key=values);
    ValueError on a syntax error, on top-level keys, or on other than one manager."""
    parser = _Parser(text)
    values, subdicts = parser.parse_list()
    if parser.peek() != "eof":
        raise _error(text, parser.offset(), "unexpected token")
    if values:
        raise ValueError(
            f"TimeManager: {sorted(values)[0]}= outside a manager's (...); "
            "expected NAME(key=value,...)"
        )
    if len(subdicts) != 1:
        raise ValueError(
            "TimeManager: exactly one time manager should be specified, "
            f"{len(subdicts)} specified instead"
        )
    name, (keys, subs) = next(iter(subdicts.items()))
    flat: dict[str, dict[str, Spec]] = {}
    for sub, (sub_keys, deeper) in subs.items():
        if deeper:
            raise ValueError(f"TimeManager: unexpected {sorted(deeper)[0]}(...) inside {sub}(...)")
        flat[sub] = sub_keys
    return name, keys, flat
