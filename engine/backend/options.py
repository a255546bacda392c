"""Backend options: lc0's ``--backend-opts`` string read against a backend's own table.

As lc0's network factory parses the string once and hands each backend the parsed options, the
protocol reads the text here: its items split, each key found in the backend's table (under its
name or an alias) and given at most once, each value read by its option. A backend declares its
options once, in a table of records that each read their own value (:class:`BackendOption`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

OPTION_SEPARATOR = ","
"""Separates the ``key=value`` items of an option string (lc0's --backend-opts syntax)."""


class OptionError(ValueError):
    """An option (engine or backend) that is unknown or has a bad value; the message names it."""


class BackendOption(Protocol):
    """One option of a backend's table."""

    @property
    def name(self) -> str: ...

    @property
    def default(self) -> Any: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...

    def read(self, raw: str) -> Any:
        """The value of ``raw``; raises OptionError naming the key, what is allowed and ``raw``."""
        ...


def split_options(text: str, what: str = "backend option") -> list[tuple[str, str]]:
    """lc0's option-string syntax: ``"key=value,key=value"`` -> [(key, value), ...] in order,
    stripped, empty items skipped. Raises OptionError for an item without ``=``."""
    pairs = []
    for item in (text or "").split(OPTION_SEPARATOR):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"{what} {item!r}: expected {key.strip() or 'KEY'}=VALUE")
        pairs.append((key.strip(), value.strip()))
    return pairs


def read_options(text: str, table: Sequence[BackendOption], backend: str) -> Mapping[str, Any]:
    """The options of ``text`` for the backend whose options ``table`` declares: every option of
    the table by its name, defaults filled in, read-only. Raises OptionError for an unknown key
    (naming it and the allowed keys), a key given twice (an alias counts as its option) or a
    value its option refuses."""
    by_key = {o.name: o for o in table} | {a: o for o in table for a in o.aliases}
    values = {o.name: o.default for o in table}
    seen: dict[str, str] = {}
    for key, raw in split_options(text):
        item = f"{key}={raw}"
        option = by_key.get(key)
        if option is None:
            raise OptionError(
                f"unknown backend option {key!r} for backend {backend}: expected one of "
                f"{', '.join(o.name for o in table)}"
            )
        if option.name in seen:
            raise OptionError(
                f"backend option {option.name} given twice ({seen[option.name]!r} and "
                f"{item!r}): expected each key once"
            )
        values[option.name] = option.read(raw)
        seen[option.name] = item
    return MappingProxyType(values)
