"""A ``pyarrow.compute.Expression`` (what DuckDB pushes into a dataset) as a predicate.

pyarrow has no public way to walk an expression, but it pickles one as Arrow's own
expression serialization: an IPC file whose schema metadata lists the tree in prefix order
(``call``/``field_ref``/``literal``/``options``/``end`` keys, repeated) and whose record batch
holds the literals and the function options as one-row columns. The metadata is read in
order through the Arrow C data interface (pyarrow's ``Schema.metadata`` is a dict, which
loses repeated keys). The tree becomes :mod:`.nodes`, translated by
:func:`~lance_partitioned.engines.nodes.translate`: field references, comparisons,
``and``/``or``/``not`` (Kleene or not), ``is_in`` with each null-matching behaviour,
``is_null``/``is_valid``, ``if_else(c, a, null)`` (how DuckDB writes IN), ``starts_with``,
and casts of literals. Anything else is opaque: the expression then also runs as a pyarrow
post-filter on the batches, so nothing is dropped.

>>> import pyarrow as pa, pyarrow.compute as pc
>>> schema = pa.schema([("id", pa.int64()), ("country", pa.string())])
>>> t = translate_arrow((pc.field("country") == "US") & (pc.field("id") > 2), schema)
>>> t.predicate, t.exact
(And(left=EqualTo(term='country', value='US'), right=GreaterThan(term='id', value=2)), True)
>>> t = translate_arrow(pc.field("country").isin(["US", "FR"]) | pc.field("id").is_null(), schema)
>>> t.predicate
Or(left=In(term='country', values=('US', 'FR')), right=IsNull(term='id'))
>>> translate_arrow(pc.utf8_length(pc.field("country")) > 1, schema).exact
False
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned.engines.nodes import (
    Call,
    Field,
    FieldPath,
    Literal,
    Node,
    Opaque,
    Translation,
    columns_of,
)
from lance_partitioned.engines.nodes import translate as translate_nodes

__all__ = ["decode", "translate_arrow"]

_COMPARISONS = {
    "equal": "=",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
}
_CONNECTIVES = {
    "and_kleene": "and",
    "or_kleene": "or",
    "and": "and_strict",
    "or": "or_strict",
    "invert": "not",
    "is_valid": "is_valid",
    "if_else": "if_else",
}
# SetLookupOptions.null_matching_behavior
_NULL_MATCHING = {0: "match", 1: "skip", 2: "emit_null", 3: "inconclusive"}


def translate_arrow(expression: pc.Expression, schema: pa.Schema) -> Translation:
    """``expression`` as a predicate over ``schema`` (see the module docstring)."""
    return translate_nodes(decode(expression), schema)


def decode(expression: pc.Expression) -> Node:
    """The neutral tree of a pyarrow expression (one opaque node when it cannot be read).

    >>> import pyarrow.compute as pc
    >>> decode(pc.field("x") >= 3)
    Call(name='>=', args=(Field(name='x'), Literal(value=<pyarrow.Int64Scalar: 3>)), option=None)
    """
    try:
        _, (buffer,) = expression.__reduce__()
        reader = pa.ipc.open_file(buffer)
        pairs = _ordered_metadata(reader.schema)
        batch = reader.get_batch(0) if reader.num_record_batches else None
        return _Decoder(batch).decode(pairs)
    except Exception:  # an expression pyarrow cannot serialize, or a format we do not know
        return Opaque(None)


class _CSchema(ctypes.Structure):
    """``struct ArrowSchema`` of the Arrow C data interface."""

    _fields_ = (
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    )


_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


def _ordered_metadata(schema: pa.Schema) -> list[tuple[str, str]]:
    """The schema's metadata pairs in order, repeated keys included.

    The C data interface encodes them as an int32 count, then per pair an int32 length and
    the key's bytes, an int32 length and the value's bytes (native byte order).
    """
    capsule = schema.__arrow_c_schema__()  # released when the capsule is
    address = _capsule_pointer(capsule, b"arrow_schema")
    metadata = _CSchema.from_address(address).metadata
    if not metadata:
        return []

    def int32(offset: int) -> int:
        return int.from_bytes(ctypes.string_at(metadata + offset, 4), sys.byteorder, signed=True)

    pairs: list[tuple[str, str]] = []
    offset = 4
    for _ in range(int32(0)):
        texts = []
        for _ in range(2):
            size = int32(offset)
            texts.append(ctypes.string_at(metadata + offset + 4, size).decode())
            offset += 4 + size
        pairs.append((texts[0], texts[1]))
    del capsule
    return pairs


class _Decoder:
    def __init__(self, batch: pa.RecordBatch | None) -> None:
        self.batch = batch

    def value(self, index: str) -> Any:
        assert self.batch is not None
        return self.batch.column(int(index))[0]

    def decode(self, pairs: list[tuple[str, str]]) -> Node:
        """Rebuild the tree from its prefix-order pairs (iterative: any depth)."""
        # open calls: [name, arguments, options]; a nested field ref is a call of its parts
        stack: list[list[Any]] = []
        for key, value in pairs:
            if key == "call":
                stack.append([value, [], None])
                continue
            if key == "nested_field_ref":
                stack.append([None, [], int(value)])
                node: Node | None = self.close_nested(stack)
                if node is None:
                    continue
            elif key == "options":
                stack[-1][2] = self.value(value)
                continue
            elif key == "end":
                name, arguments, options = stack.pop()
                node = _call(name, tuple(arguments), options)
            elif key == "literal":
                node = Literal(self.value(value))
            elif key == "field_ref":
                node = Field(value)
            else:
                raise ValueError(f"unknown key {key!r} in a serialized expression")
            while True:
                if not stack:
                    return node
                stack[-1][1].append(node)
                closed = self.close_nested(stack)
                if closed is None:
                    break
                node = closed
        raise ValueError("a serialized expression ended inside a call")

    @staticmethod
    def close_nested(stack: list[list[Any]]) -> Node | None:
        """The node of a nested field ref on top of ``stack`` once its parts are read."""
        name, parts, count = stack[-1]
        if name is not None or len(parts) < count:
            return None
        stack.pop()
        first = parts[0] if parts else None
        if len(parts) > 1 and all(type(part) is Field for part in parts):
            return FieldPath(parts[0].name, tuple(part.name for part in parts[1:]))
        return Opaque(frozenset({first.name}) if isinstance(first, Field) else None)


def _call(name: str, args: tuple[Node, ...], options: Any) -> Node:
    """The neutral node of one pyarrow function call."""
    settings = options.as_py() if isinstance(options, pa.StructScalar) else {}
    if name in _COMPARISONS:
        return Call(_COMPARISONS[name], args)
    if name in _CONNECTIVES:
        return Call(_CONNECTIVES[name], args)
    if name == "is_null":
        return Call("is_null_or_nan" if settings.get("nan_is_null") else "is_null", args)
    if name == "is_in" and len(args) == 1 and isinstance(options, pa.StructScalar):
        behaviour = settings.get("null_matching_behavior")
        if behaviour is None:  # older pyarrow: skip_nulls
            behaviour = 1 if settings.get("skip_nulls") else 0
        value_set = options["value_set"]
        if (
            isinstance(value_set, pa.ListScalar | pa.LargeListScalar)
            and behaviour in _NULL_MATCHING
        ):
            return Call("is_in", (args[0], Literal(value_set.values)), _NULL_MATCHING[behaviour])
    if name == "starts_with" and len(args) == 1 and not settings.get("ignore_case", True):
        return Call("starts_with", (args[0], Literal(pa.scalar(settings.get("pattern")))))
    if name == "cast" and len(args) == 1 and isinstance(args[0], Literal):
        folded = _cast(args[0].value, options)
        if folded is not None:
            return folded
    return Opaque(columns_of(Call(name, args)))


def _cast(value: Any, options: Any) -> Literal | None:
    """A cast literal, folded by pyarrow (None when pyarrow refuses it)."""
    if not isinstance(value, pa.Scalar) or not isinstance(options, pa.StructScalar):
        return None
    target = options.type.field("to_type").type
    try:
        return Literal(pc.cast(value, target, safe=True))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
