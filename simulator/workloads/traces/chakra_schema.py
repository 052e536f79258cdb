"""Chakra ET messages built at runtime (no generated code) and the length-delimited stream format.

The descriptors mirror ``et_def.proto`` next to this file (the published field numbers of
mlcommons/chakra ``schema/protobuf/et_def.proto``); protobuf's message factory turns them into
ordinary message classes. A trace file is one ``GlobalMetadata`` then ``Node`` messages, each
preceded by its length as a base-128 varint (what Chakra's ``encode_message`` writes).
"""

from __future__ import annotations

import functools
from typing import BinaryIO, Iterator

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "ChakraProtoMsg"
NODE_TYPES = {"INVALID_NODE": 0, "METADATA_NODE": 1, "MEM_LOAD_NODE": 2, "MEM_STORE_NODE": 3, "COMP_NODE": 4,
              "COMM_SEND_NODE": 5, "COMM_RECV_NODE": 6, "COMM_COLL_NODE": 7, "STORAGE_NODE": 8,
              "BATCH_NODE": 9, "CHECKPOINT_NODE": 10}
COMM_TYPES = {"ALL_REDUCE": 0, "REDUCE": 1, "ALL_GATHER": 2, "GATHER": 3, "SCATTER": 4, "BROADCAST": 5,
              "ALL_TO_ALL": 6, "REDUCE_SCATTER": 7, "REDUCE_SCATTER_BLOCK": 8, "BARRIER": 9}

_F = descriptor_pb2.FieldDescriptorProto
_SCALAR = {"string": _F.TYPE_STRING, "double": _F.TYPE_DOUBLE, "float": _F.TYPE_FLOAT, "int32": _F.TYPE_INT32,
           "int64": _F.TYPE_INT64, "uint32": _F.TYPE_UINT32, "uint64": _F.TYPE_UINT64, "bool": _F.TYPE_BOOL}

MESSAGES: dict[str, list[tuple[str, int, str, bool]]] = {
    # message -> (field, number, type, repeated); a type that is not a scalar names a message or enum
    "AttributeProto": [("name", 1, "string", False), ("doc_string", 2, "string", False),
                       ("double_val", 3, "double", False), ("float_val", 5, "float", False),
                       ("int32_val", 7, "int32", False), ("int64_val", 9, "int64", False),
                       ("int64_list", 10, "Int64List", False), ("uint32_val", 11, "uint32", False),
                       ("uint64_val", 13, "uint64", False), ("bool_val", 27, "bool", False),
                       ("bool_list", 28, "BoolList", False), ("string_val", 29, "string", False)],
    "Int64List": [("values", 1, "int64", True)],
    "BoolList": [("values", 1, "bool", True)],
    "GlobalMetadata": [("version", 1, "string", False), ("attr", 2, "AttributeProto", True)],
    "Node": [("id", 1, "uint64", False), ("name", 2, "string", False), ("type", 3, "NodeType", False),
             ("ctrl_deps", 4, "uint64", True), ("data_deps", 5, "uint64", True),
             ("start_time_micros", 6, "uint64", False), ("duration_micros", 7, "uint64", False),
             ("inputs", 8, "IOInfo", False), ("outputs", 9, "IOInfo", False), ("attr", 10, "AttributeProto", True)],
    "IOInfo": [("values", 1, "string", False), ("shapes", 2, "string", False), ("types", 3, "string", False)],
}
ONEOF_VALUE = frozenset(n for n, *_ in MESSAGES["AttributeProto"][2:])
"""AttributeProto fields inside ``oneof value``."""
ENUMS = {"NodeType": NODE_TYPES, "CollectiveCommType": COMM_TYPES}


@functools.cache
def _classes() -> dict[str, type]:
    proto = descriptor_pb2.FileDescriptorProto(name="fabricsim_chakra_et_def.proto", package=PACKAGE,
                                               syntax="proto3")
    for name, values in ENUMS.items():
        enum = proto.enum_type.add(name=name)
        for key, number in values.items():
            enum.value.add(name=key, number=number)
    for name, fields in MESSAGES.items():
        msg = proto.message_type.add(name=name)
        if name == "AttributeProto":
            msg.oneof_decl.add(name="value")
        for fname, number, ftype, repeated in fields:
            field = msg.field.add(name=fname, number=number,
                                  label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
            if ftype in _SCALAR:
                field.type = _SCALAR[ftype]
            elif ftype in ENUMS:
                field.type, field.type_name = _F.TYPE_ENUM, f".{PACKAGE}.{ftype}"
            else:
                field.type, field.type_name = _F.TYPE_MESSAGE, f".{PACKAGE}.{ftype}"
            if name == "AttributeProto" and fname in ONEOF_VALUE:
                field.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
            for name in MESSAGES}


def message_class(name: str) -> type:
    """The runtime class of one Chakra message (``Node``, ``GlobalMetadata``, ``AttributeProto``...)."""
    return _classes()[name]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def write_delimited(stream: BinaryIO, message) -> None:  # noqa: ANN001 - any protobuf message
    """One message preceded by its varint length."""
    data = message.SerializeToString()
    stream.write(_varint(len(data)))
    stream.write(data)


class TraceFormatError(ValueError):
    """A stream that is not a sequence of length-delimited messages."""


def read_delimited(data: bytes) -> Iterator[bytes]:
    """The message payloads of a length-delimited stream."""
    pos, n = 0, len(data)
    while pos < n:
        length, shift = 0, 0
        while True:
            if pos >= n:
                raise TraceFormatError(f"stream ends inside a length prefix at byte {pos}")
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
            if shift > 63:
                raise TraceFormatError(f"length prefix longer than 10 bytes at byte {pos}")
        if pos + length > n:
            raise TraceFormatError(f"message of {length} B at byte {pos} runs past the end ({n} B)")
        yield data[pos:pos + length]
        pos += length


def attr_value(attr):  # noqa: ANN001, ANN201 - AttributeProto -> its Python value
    """The value an AttributeProto holds (lists as Python lists), or None."""
    which = attr.WhichOneof("value")
    if which is None:
        return None
    value = getattr(attr, which)
    return list(value.values) if which.endswith("_list") else value
