"""The protocol's reader of backend options (engine.backend.options.read_options): lc0's
``--backend-opts`` syntax read against a backend's own table, for every backend alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from engine.backend import OptionError, read_options


@dataclass(frozen=True)
class Count:
    """An option of a made-up backend: an integer >= 0."""

    name: str
    default: Any
    aliases: tuple[str, ...] = ()

    def read(self, raw: str) -> int:
        if not raw.isdigit():
            raise OptionError(f"backend option {self.name}: expected an integer >= 0, got {raw!r}")
        return int(raw)


TABLE = (Count("rows", 8, aliases=("batch",)), Count("steps", None))


def test_every_option_by_name_defaults_filled_in_read_only():
    values = read_options(" batch = 32 ,, ", TABLE, "toy")
    assert dict(values) == {"rows": 32, "steps": None}
    with pytest.raises(TypeError):
        values["rows"] = 1  # type: ignore[index]  # the point of the test


def test_an_unknown_key_names_the_backend_and_the_allowed_keys():
    with pytest.raises(OptionError, match="unknown backend option 'row' for backend toy: expected one of rows, steps"):
        read_options("row=1", TABLE, "toy")


def test_a_key_twice_counts_an_alias_as_its_option():
    with pytest.raises(OptionError, match=r"backend option rows given twice \('rows=1' and 'batch=2'\)"):
        read_options("rows=1,batch=2", TABLE, "toy")


def test_the_option_reads_its_own_value_and_an_item_needs_a_value():
    with pytest.raises(OptionError, match="backend option steps: expected an integer >= 0, got '-1'"):
        read_options("steps=-1", TABLE, "toy")
    with pytest.raises(OptionError, match="backend option 'steps': expected steps=VALUE"):
        read_options("rows=1,steps", TABLE, "toy")
