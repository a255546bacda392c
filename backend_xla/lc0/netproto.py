"""lc0's ``net.proto`` as protobuf message classes, built at import time from :mod:`.schema`.

The descriptor lives in a private pool so it cannot clash with another ``pblczero`` registered
by some other library in the same process. lc0's enum fields are declared ``int32``: they are
the same varints on the wire, and an open integer keeps a value this schema does not know (a
newer format, a damaged file) visible to the checks that report it, where proto2's closed enums
would silently move it to the unknown fields and read the default instead.

    message("Layer", {"params": b"..."}) -> a Layer message (fields set from a dict)
    parse(data, "Net", where=path)       -> a Net message; WeightsError naming ``where``
    present(msg, "se")                   -> msg.se if set, else None
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from .errors import WeightsError
from .schema import SCHEMA

PACKAGE = "pblczero"
_FD = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "uint32": _FD.TYPE_UINT32,
    "int32": _FD.TYPE_INT32,
    "enum": _FD.TYPE_INT32,
    "float": _FD.TYPE_FLOAT,
    "fixed32": _FD.TYPE_FIXED32,
    "bytes": _FD.TYPE_BYTES,
    "string": _FD.TYPE_STRING,
}


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="xlazero/lc0_net.proto", package=PACKAGE, syntax="proto2"
    )
    for spec in SCHEMA.values():
        msg = fdp.message_type.add(name=spec.name)
        for f in spec.fields:
            field = msg.field.add(
                name=f.name,
                number=f.number,
                label=_FD.LABEL_REPEATED if f.repeated else _FD.LABEL_OPTIONAL,
            )
            if f.kind in _SCALARS:
                field.type = _SCALARS[f.kind]
            else:
                field.type = _FD.TYPE_MESSAGE
                field.type_name = f".{PACKAGE}.{f.kind}"
    return fdp


def _message_classes() -> dict[str, type[Message]]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in SCHEMA
    }


CLASSES: dict[str, type[Message]] = _message_classes()
"""Message class of each ``net.proto`` message, by its name in :mod:`.schema`."""


def message(type_name: str, fields: dict[str, Any] | None = None) -> Message:
    """A new ``type_name`` message with ``fields`` set (messages, lists of messages and scalars as
    the protobuf constructor takes them); ``None`` values are left unset."""
    if type_name not in SCHEMA:
        raise KeyError(f"expected a net.proto message name, got {type_name!r}")
    return CLASSES[type_name](**{k: v for k, v in (fields or {}).items() if v is not None})


def parse(data: bytes, type_name: str, where: str = "message") -> Message:
    """Parse ``data`` as ``type_name``; a malformed buffer raises :class:`WeightsError`."""
    msg = CLASSES[type_name]()
    try:
        msg.ParseFromString(data)
    except DecodeError as e:
        raise WeightsError(
            f"{where}: cannot parse {len(data)} bytes as a {PACKAGE}.{type_name} protobuf "
            f"(expected a complete message: the data is truncated or not an lc0 weight file): {e}"
        ) from e
    return msg


def present(msg: Message | None, name: str) -> Any:
    """``msg.<name>`` when ``msg`` exists and the field is set, else ``None``: protobuf reads an
    unset sub-message as an empty default, while lc0 tells absent heads and blocks apart."""
    if msg is None or not msg.HasField(name):
        return None
    return getattr(msg, name)


def type_name(msg: Message) -> str:
    """The schema name of ``msg``'s message type (``"Layer"``, ``"Net"``, ...)."""
    return msg.DESCRIPTOR.name
