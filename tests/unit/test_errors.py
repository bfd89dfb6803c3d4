"""The error hierarchy: rooted in lance-namespace, each class also its lance-namespace twin."""

from __future__ import annotations

import inspect

import lance_namespace
import pytest

from lance_partitioned import errors


def _our_error_classes() -> list[type[Exception]]:
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.LancePartitionedError)
    ]


def test_root_is_a_lance_namespace_error() -> None:
    assert issubclass(errors.LancePartitionedError, lance_namespace.LanceNamespaceError)


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (errors.InvalidInputError, lance_namespace.InvalidInputError),
        (errors.PartitionSpecError, lance_namespace.InvalidInputError),
        (errors.PartitionByParseError, lance_namespace.InvalidInputError),
        (errors.SchemaMismatchError, lance_namespace.TableSchemaValidationError),
        (errors.TableNotFoundError, lance_namespace.TableNotFoundError),
        (errors.NamespaceNotFoundError, lance_namespace.NamespaceNotFoundError),
        (errors.NotAPartitionedNamespaceError, lance_namespace.NamespaceNotFoundError),
        (errors.NamespaceAlreadyExistsError, lance_namespace.NamespaceAlreadyExistsError),
        (errors.ConcurrentModificationError, lance_namespace.ConcurrentModificationError),
        (errors.UnsupportedOperationError, lance_namespace.UnsupportedOperationError),
        (errors.TableVersionNotFoundError, lance_namespace.TableVersionNotFoundError),
    ],
)
def test_each_error_is_caught_by_its_lance_namespace_twin(
    ours: type[Exception], theirs: type[Exception]
) -> None:
    with pytest.raises(theirs, match="column 'x'"):
        raise ours("column 'x' is at fault")


def test_every_error_has_a_lance_namespace_code() -> None:
    for cls in _our_error_classes():
        exc = cls("x") if cls is not errors.PartitionByParseError else cls("x", text="x")
        assert isinstance(exc.code, lance_namespace.ErrorCode), cls


def test_parse_error_keeps_position() -> None:
    exc = errors.PartitionByParseError("bad token", text="a, b(", position=3)
    assert (exc.text, exc.position) == ("a, b(", 3)
