"""The public surface of :class:`PartitionedNamespace`: our API, not LanceNamespace's."""

from __future__ import annotations

import pydoc

import lance_namespace as ln

import lance_partitioned as lp

# every operation of the LanceNamespace ABC (list_namespaces, create_table, ...)
LANCE_OPERATIONS = {n for n in dir(ln.LanceNamespace) if not n.startswith("_")}


def test_partitioned_namespace_has_none_of_the_lance_namespace_operations() -> None:
    public = {n for n in dir(lp.PartitionedNamespace) if not n.startswith("_")}
    assert len(LANCE_OPERATIONS) > 40
    assert public & LANCE_OPERATIONS == set()
    assert not issubclass(lp.PartitionedNamespace, ln.LanceNamespace)


def test_help_is_short() -> None:
    text = pydoc.render_doc(lp.PartitionedNamespace, renderer=pydoc.plaintext)
    assert "Not supported" not in text
    # 862 lines (37795 characters) when it inherited LanceNamespace, 165 without
    assert len(text.splitlines()) < 400
