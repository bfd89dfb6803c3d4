"""One vector index model for the whole namespace: IVF centroids (and a PQ codebook) trained
once, shared by every leaf's index.

Training an IVF index is k-means on a sample of the vectors (``num_partitions`` x
``sample_rate`` rows), plus, for ``IVF_PQ``, k-means per sub-vector on the residuals
(``2 ** num_bits`` x ``sample_rate`` rows). Trained per leaf, a namespace of 100 leaves pays
that 100 times, and each leaf's centroids describe only its own rows. :func:`train_model`
samples the leaves a build keeps (each in proportion to its rows, the total being the sample
Lance draws for one table of the same rows, read with ``take`` so memory stays bounded by
that sample) and trains on it with Lance's own training
(:class:`lance.indices.IndicesBuilder`); every leaf's index is then built with pylance's
``ivf_centroids`` / ``pq_codebook``, which skip the training: the leaf only assigns and
encodes its rows. ``num_partitions`` is then one table's value for the namespace (default
the square root of the indexed rows, at most one partition per 256 rows), every leaf
holding the same partitions (many of them empty in a leaf); ``nprobes`` probes the same
partitions in every leaf, which a single table of the same rows would probe.

The model is persisted as a ``.npz`` file under ``_index_models/`` in the namespace root,
written before the index commit and referenced from the index definition (key ``model``),
so leaves indexed later (``optimize()``) get the same model. A model that no definition of
a retained ``__manifest`` version names (an index dropped or replaced, a build that failed
before recording its definition) is removed by ``cleanup()`` once older than its retention
(:func:`unreferenced_models`).
"""

from __future__ import annotations

import datetime as dt
import io
import math
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance.indices import IndicesBuilder

from lance_partitioned import errors
from lance_partitioned.maintenance.files import Store, StoredFile
from lance_partitioned.manifest import Manifest
from lance_partitioned.search.definitions import load_definitions

__all__ = [
    "MODELS_DIR",
    "MODEL_KEY",
    "SharedModel",
    "load_model",
    "namespace_partitions",
    "sample_size",
    "save_model",
    "train_model",
    "unreferenced_models",
]

MODELS_DIR = "_index_models"
"""The directory under the namespace root holding the shared vector index models."""

MODEL_KEY = "model"
"""The index definition key naming the model file (relative to the namespace root)."""

_SAMPLE_RATE = 256
_MAX_ITERS = 50


@dataclass(frozen=True)
class SharedModel:
    """A trained IVF (and PQ) model.

    Attributes
    ----------
    ivf_centroids : numpy.ndarray
        ``(num_partitions, dim)``.
    pq_codebook : numpy.ndarray or None
        Shaped ``(2 ** num_bits, dim)``, but in Lance's layout: flattened, its values are
        sub-vector major (``num_sub_vectors x 2 ** num_bits x dim / num_sub_vectors``: the
        codebook of the first sub-vector, then the next), so a row is not one codeword of
        every sub-vector; None for ``IVF_FLAT`` and ``IVF_HNSW_SQ``.
    path : str
        The file under the namespace root it is stored in ("" until saved).
    """

    ivf_centroids: np.ndarray
    pq_codebook: np.ndarray | None
    path: str = ""

    @property
    def num_partitions(self) -> int:
        """The IVF partitions (rows of the centroids)."""
        return int(self.ivf_centroids.shape[0])

    def params(self) -> dict[str, Any]:
        """The pylance ``create_index`` arguments that use this model."""
        dim = int(self.ivf_centroids.shape[1])
        out: dict[str, Any] = {
            "num_partitions": self.num_partitions,
            "ivf_centroids": _fsl(self.ivf_centroids, dim),
        }
        if self.pq_codebook is not None:
            out["pq_codebook"] = _fsl(self.pq_codebook, dim)
        return out


def _fsl(values: np.ndarray, dim: int) -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(values).ravel()), dim)


def namespace_partitions(rows: int) -> int:
    """The default ``num_partitions`` of a model for ``rows`` vectors: the square root of the
    rows, at most one partition per 256 rows (as a leaf's own default)."""
    return max(1, min(math.isqrt(rows), rows // 256))


def sample_size(index_type: str, num_partitions: int, params: Mapping[str, Any]) -> int:
    """The rows Lance samples to train one table's index: ``num_partitions * sample_rate``
    for IVF, ``2 ** num_bits * sample_rate`` for PQ (the larger one)."""
    rate = int(params.get("sample_rate", _SAMPLE_RATE))
    size = num_partitions * rate
    if index_type == "IVF_PQ":
        size = max(size, 2 ** int(params.get("num_bits", 8)) * rate)
    return size


def sample_vectors(
    leaves: Sequence[tuple[lance.LanceDataset, str, int]], size: int, threads: int
) -> pa.Array:
    """About ``size`` non-null vectors drawn at random from ``leaves`` ((dataset, column,
    rows) each), every leaf contributing in proportion to its rows."""
    total = sum(rows for _, _, rows in leaves)
    rng = np.random.default_rng()
    wanted = [min(rows, math.ceil(size * rows / total)) for _, _, rows in leaves]
    picks = [
        np.sort(rng.choice(rows, n, replace=False))
        for (_, _, rows), n in zip(leaves, wanted, strict=True)
    ]

    def take(i: int) -> pa.Array:
        ds, column, _ = leaves[i]
        table = ds.take(picks[i].tolist(), columns=[column])
        return table.column(0).combine_chunks()

    with ThreadPoolExecutor(max(1, min(threads, len(leaves)))) as pool:
        parts = list(pool.map(take, range(len(leaves))))
    parts = [part.cast(parts[0].type) for part in parts if len(part)]
    if not parts:
        return pa.array([], pa.null())
    sample = pa.concat_arrays(parts)
    return sample.filter(pc.is_valid(sample))


def train_model(
    sample: pa.Array,
    index_type: str,
    num_partitions: int,
    params: Mapping[str, Any],
    num_sub_vectors: int | None,
) -> SharedModel | None:
    """IVF centroids (and the PQ codebook for ``IVF_PQ``) trained on ``sample`` by Lance's
    training; None when the sample is too small for Lance to train them (fewer than 2 rows
    per partition or per PQ centroid): the leaves then train their own."""
    rows = len(sample)
    rate = int(params.get("sample_rate", _SAMPLE_RATE))
    iters = int(params.get("max_iters", _MAX_ITERS))
    bits = int(params.get("num_bits", 8))
    metric = str(params.get("metric", "L2")).lower()
    ivf_rate = min(rate, rows // max(1, num_partitions))
    pq_rate = min(rate, rows // 2**bits)
    if ivf_rate < 2 or (index_type == "IVF_PQ" and pq_rate < 2):
        return None
    with tempfile.TemporaryDirectory(prefix="lp-train-") as tmp:
        ds = lance.write_dataset(pa.table({"vector": sample}), f"{tmp}/sample.lance")
        try:
            builder = IndicesBuilder(ds, "vector")
            ivf = builder.train_ivf(
                num_partitions, distance_type=metric, sample_rate=ivf_rate, max_iters=iters
            )
            codebook = None
            if index_type == "IVF_PQ":
                pq = builder.train_pq(
                    ivf, num_sub_vectors, sample_rate=pq_rate, max_iters=iters, num_bits=bits
                )
                codebook = _matrix(pq.codebook)
        except (OSError, ValueError, TypeError, RuntimeError) as exc:
            raise errors.InvalidInputError(
                f"cannot train the shared {index_type} model: {exc}"
            ) from exc
    return SharedModel(_matrix(ivf.centroids), codebook)


def _matrix(array: Any) -> np.ndarray:
    flat = array.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat).reshape(len(array), -1)


def save_model(manifest: Manifest, name: str, model: SharedModel) -> SharedModel:
    """Write ``model`` to a new file under :data:`MODELS_DIR`; returns it with its path."""
    path = f"{MODELS_DIR}/{name}-{uuid.uuid4().hex}.npz"
    buffer = io.BytesIO()
    arrays = {"ivf_centroids": model.ivf_centroids}
    if model.pq_codebook is not None:
        arrays["pq_codebook"] = model.pq_codebook
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    store = Store(manifest.root, manifest.storage_options)
    full = f"{store.base}/{path}"
    try:
        if store.local:
            store.fs.create_dir(f"{store.base}/{MODELS_DIR}", recursive=True)
        with store.fs.open_output_stream(full) as out:
            out.write(buffer.getvalue())
    except (OSError, ValueError) as exc:
        raise errors.StorageError(f"cannot write the index model {full!r}: {exc}") from exc
    return SharedModel(model.ivf_centroids, model.pq_codebook, path)


def load_model(manifest: Manifest, path: str) -> SharedModel:
    """The model stored at ``path`` (relative to the namespace root); cached per file, which
    is never rewritten (its name holds a fresh uuid)."""
    return _load(manifest.root, tuple(sorted(manifest.storage_options.items())), path)


@lru_cache(maxsize=16)
def _load(root: str, options: tuple[tuple[str, str], ...], path: str) -> SharedModel:
    store = Store(root, dict(options))
    full = f"{store.base}/{path}"
    try:
        with store.fs.open_input_file(full) as handle:
            data = handle.read()
        with np.load(io.BytesIO(data), allow_pickle=False) as found:
            centroids = np.array(found["ivf_centroids"])
            codebook = np.array(found["pq_codebook"]) if "pq_codebook" in found else None
    except FileNotFoundError as exc:
        raise errors.CorruptNamespaceError(
            f"the vector index model {path!r} that an index definition names is missing "
            f"under {root!r}; rebuild the index with create_index(..., replace=True)"
        ) from exc
    except (OSError, ValueError, KeyError) as exc:
        raise errors.StorageError(f"cannot read the index model {full!r}: {exc}") from exc
    return SharedModel(centroids, codebook, path)


def unreferenced_models(
    manifest: Manifest,
    store: Store,
    versions: Sequence[int],
    cutoff: dt.datetime,
    listed: Sequence[StoredFile] | None = None,
) -> list[StoredFile]:
    """The model files under :data:`MODELS_DIR` that no index definition of the
    ``__manifest`` ``versions`` names, older than ``cutoff`` (a build in progress writes its
    model before it records the definition). ``listed``: those files, listed already."""
    files = store.files(MODELS_DIR) if listed is None else list(listed)
    if not files:
        return []
    named: set[str] = set()
    for version in versions:
        try:
            metadata = manifest.table_metadata(version)
        except errors.TableVersionNotFoundError:
            continue  # another cleanup removed it meanwhile
        for definition in load_definitions(metadata).values():
            if definition.extra.get(MODEL_KEY):
                named.add(str(definition.extra[MODEL_KEY]))
    return [f for f in files if f.path not in named and f.mtime is not None and f.mtime < cutoff]
