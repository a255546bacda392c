"""A small protobuf (proto2) wire-format decoder and encoder driven by :mod:`.schema`.

Only what lc0's ``net.proto`` needs: varints, fixed32, length-delimited fields (strings, bytes,
nested messages, packed repeated varints). Unknown fields are skipped, as protobuf does; groups
(wire types 3/4) are rejected. Nested messages are parsed eagerly, but recursion depth is bounded
by the (non-recursive) schema, and every length is checked against the buffer before slicing.
"""

from __future__ import annotations

import struct
from typing import Any

from .errors import WeightsError
from .schema import SCHEMA, Field

WIRE_VARINT = 0
WIRE_FIXED64 = 1
WIRE_LEN = 2
WIRE_FIXED32 = 5
_VARINT_MAX_BYTES = 10


class Message:
    """A decoded message: attribute access by field name.

    Unset singular fields read as ``None`` (messages and scalars alike); repeated fields read as
    lists (empty when absent). ``has(name)`` tells presence, as in protobuf's ``has_*``.
    """

    __slots__ = ("type_name", "values")

    def __init__(self, type_name: str, values: dict[str, Any] | None = None):
        self.type_name = type_name
        self.values: dict[str, Any] = values if values is not None else {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        field = SCHEMA[self.type_name].by_name.get(name)
        if field is None:
            raise AttributeError(f"message {self.type_name} has no field {name!r}")
        if name in self.values:
            return self.values[name]
        return [] if field.repeated else None

    def has(self, name: str) -> bool:
        value = self.values.get(name)
        return value is not None and value != []

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Message({self.type_name}, {sorted(self.values)})"


def _varint(buf: memoryview, pos: int, end: int, where: str) -> tuple[int, int]:
    result = 0
    shift = 0
    for i in range(_VARINT_MAX_BYTES):
        if pos >= end:
            raise WeightsError(f"{where}: truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise WeightsError(f"{where}: varint longer than {_VARINT_MAX_BYTES} bytes")


def decode(buf: bytes | memoryview, type_name: str, where: str = "message") -> Message:
    """Decode ``buf`` as message ``type_name``; ``where`` prefixes error messages."""
    view = memoryview(buf)
    return _decode(view, 0, len(view), type_name, where)


def _decode(buf: memoryview, pos: int, end: int, type_name: str, where: str) -> Message:
    spec = SCHEMA[type_name]
    values: dict[str, Any] = {}
    while pos < end:
        key, pos = _varint(buf, pos, end, where)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WeightsError(f"{where}: field number 0 in {type_name} (not a protobuf message)")
        field = spec.by_number.get(number)
        if wire == WIRE_VARINT:
            value, pos = _varint(buf, pos, end, where)
        elif wire == WIRE_FIXED64:
            if pos + 8 > end:
                raise WeightsError(f"{where}: truncated 64-bit field {number} in {type_name}")
            value, pos = bytes(buf[pos:pos + 8]), pos + 8
        elif wire == WIRE_FIXED32:
            if pos + 4 > end:
                raise WeightsError(f"{where}: truncated 32-bit field {number} in {type_name}")
            value, pos = bytes(buf[pos:pos + 4]), pos + 4
        elif wire == WIRE_LEN:
            length, pos = _varint(buf, pos, end, where)
            if pos + length > end:
                raise WeightsError(
                    f"{where}: truncated: field {number} of {type_name} declares {length} bytes, "
                    f"only {end - pos} left")
            value, pos = (pos, pos + length), pos + length
        else:
            raise WeightsError(f"{where}: unsupported wire type {wire} (field {number} of {type_name})")
        if field is None:
            continue  # unknown field: skipped, as protobuf does
        _store(values, field, wire, value, buf, type_name, where)
    if pos != end:
        raise WeightsError(f"{where}: message {type_name} overruns its declared length")
    return Message(type_name, values)


def _store(values: dict, field: Field, wire: int, raw: Any, buf: memoryview, type_name: str,
           where: str) -> None:
    kind = field.kind
    fwhere = f"{where}.{field.name}"
    if kind in ("uint32", "enum", "int32"):
        if wire == WIRE_LEN and field.repeated:  # packed repeated varints
            start, stop = raw
            items = []
            while start < stop:
                item, start = _varint(buf, start, stop, fwhere)
                items.append(item)
            values.setdefault(field.name, []).extend(items)
            return
        if wire != WIRE_VARINT:
            raise WeightsError(f"{fwhere}: expected a varint, got wire type {wire}")
        value = raw & 0xFFFFFFFF
        if kind == "int32" and value >= 1 << 31:
            value -= 1 << 32
    elif kind in ("float", "fixed32"):
        if wire != WIRE_FIXED32:
            raise WeightsError(f"{fwhere}: expected a 32-bit value, got wire type {wire}")
        value = struct.unpack("<f" if kind == "float" else "<I", raw)[0]
    elif kind in ("bytes", "string"):
        if wire != WIRE_LEN:
            raise WeightsError(f"{fwhere}: expected bytes, got wire type {wire}")
        start, stop = raw
        value = bytes(buf[start:stop])
        if kind == "string":
            value = value.decode("utf-8", errors="replace")
    else:  # nested message
        if wire != WIRE_LEN:
            raise WeightsError(f"{fwhere}: expected a message, got wire type {wire}")
        start, stop = raw
        index = len(values.get(field.name, [])) if field.repeated else None
        sub_where = fwhere if index is None else f"{fwhere}[{index}]"
        value = _decode(buf, start, stop, kind, sub_where)
    if field.repeated:
        values.setdefault(field.name, []).append(value)
    else:
        values[field.name] = value  # last one wins, as in protobuf


# ----------------------------------------------------------------------------- encoder

def _enc_varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _enc_varint(number << 3 | wire)


def encode(message: Message) -> bytes:
    """Serialize ``message`` (fields in field-number order, repeated varints unpacked)."""
    spec = SCHEMA[message.type_name]
    out = bytearray()
    for field in sorted(spec.by_number.values(), key=lambda f: f.number):
        if field.name not in message.values:
            continue
        value = message.values[field.name]
        for item in (value if field.repeated else [value]):
            if item is None:
                continue
            out += _encode_one(field, item)
    return bytes(out)


def _encode_one(field: Field, item: Any) -> bytes:
    kind = field.kind
    if kind in ("uint32", "enum", "int32"):
        return _key(field.number, WIRE_VARINT) + _enc_varint(int(item))
    if kind == "float":
        return _key(field.number, WIRE_FIXED32) + struct.pack("<f", item)
    if kind == "fixed32":
        return _key(field.number, WIRE_FIXED32) + struct.pack("<I", item)
    if kind in ("bytes", "string"):
        data = item.encode() if isinstance(item, str) else bytes(item)
    else:
        data = encode(item)
    return _key(field.number, WIRE_LEN) + _enc_varint(len(data)) + data
