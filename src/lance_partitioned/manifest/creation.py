"""Creating a namespace's ``__manifest``: a new one, the rest of one that an interrupted
create left without partition specs, or (``exist_ok``) a check that the one already there
holds the same schema and specs."""

from __future__ import annotations

from collections.abc import Mapping

from lance_partitioned import errors
from lance_partitioned.manifest.table import Manifest
from lance_partitioned.spec.metadata import NamespaceMetadata

__all__ = ["create_manifest"]


def create_manifest(
    uri: str,
    metadata: NamespaceMetadata,
    storage_options: Mapping[str, str] | None = None,
    *,
    exist_ok: bool = False,
) -> Manifest:
    """The ``__manifest`` of a namespace at ``uri`` holding ``metadata``, created unless
    ``exist_ok`` and the one there holds the same schema and specs (or was left unfinished).

    Raises
    ------
    NamespaceAlreadyExistsError
        Something is at ``uri`` and ``exist_ok`` is false, or it holds another schema or
        spec, or it is a directory namespace with content that is not a partitioned one.
    StorageError
        The storage refused the create.
    """
    manifest = Manifest(str(uri), storage_options)
    if not manifest.exists():
        with errors.typed_storage_errors(manifest.root, "create"):
            Manifest.create(str(uri), metadata, storage_options)
        return manifest
    if manifest.is_unfinished():
        if not exist_ok:
            raise errors.NamespaceAlreadyExistsError(
                f"an unfinished create left a __manifest without partition specs at "
                f"{uri!r}: pass exist_ok=True to finish it"
            )
        with errors.typed_storage_errors(manifest.root, "create"):
            manifest.finish_create(metadata)
        return manifest
    if not exist_ok:
        raise errors.NamespaceAlreadyExistsError(f"a namespace already exists at {uri!r}")
    try:
        existing = manifest.snapshot().metadata
    except errors.NotAPartitionedNamespaceError as exc:
        raise errors.NamespaceAlreadyExistsError(
            f"a directory namespace with content (not a partitioned one) exists at {uri!r}"
        ) from exc
    if existing.to_table_metadata() != metadata.to_table_metadata():
        raise errors.NamespaceAlreadyExistsError(
            f"a namespace with another schema or partition spec exists at {uri!r}"
        )
    return manifest
