"""Whether a Spark merge caches its source, and the source's row count, counted once.

The merge gives each source row an id (``monotonically_increasing_id``) and reads the
source again after its first pass only in rare cases (a row a leaf key joined that matched
nothing there, a leaf another writer changed before the commit, the Bloom filter of a
join route): each such pass must see the same rows with the same ids. A source that Spark
computes again identically needs no copy; caching any other costs a pass that converts
every row into Spark's columnar cache (5M rows of four columns: ~10 CPU seconds, as long as
the rest of the routing).

:func:`materialized` decides, as Delta's ``merge.materializeSource=auto`` does: the source
is used as it is when its plan (with the data the session cached in place) is
deterministic and built only of rows computed again the same way, partition by partition,
in the same order: a ``range``, local rows (``createDataFrame`` of a small list or pandas
frame), data the user cached, under projections and filters. Anything else (a file scan,
whose files may change; a shuffle, whose rows' order within a partition is not stable; an
RDD; a non-deterministic expression) is cached, as every source was before. The Spark conf
:data:`MATERIALIZE_CONF` chooses: ``auto`` (default, that rule), ``true`` (always cache),
``false`` (never: the caller vouches for the source).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lance_partitioned import errors

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["MATERIALIZE_CONF", "SourceCount", "materialized"]

MATERIALIZE_CONF = "spark.lance_partitioned.merge.materializeSource"

#: Logical plan nodes whose rows Spark computes again the same, in the same order.
_STABLE = frozenset(
    {
        "Range",
        "LocalRelation",
        "OneRowRelation",
        "InMemoryRelation",  # data the session cached
        "Project",
        "Filter",
        "SubqueryAlias",
    }
)


def materialized(spark: SparkSession, source: DataFrame) -> bool:
    """Whether the merge caches ``source`` (see the module)."""
    setting = (spark.conf.get(MATERIALIZE_CONF, "auto") or "auto").lower()
    if setting not in ("auto", "true", "false"):
        raise errors.InvalidInputError(
            f"{MATERIALIZE_CONF} is {setting!r}: use auto, true or false"
        )
    if setting != "auto":
        return setting == "true"
    try:
        plan = source._jdf.queryExecution().withCachedData()
        return not (bool(plan.deterministic()) and _stable(plan))
    except Exception:  # (no JVM plan to inspect, e.g. Spark Connect: cache, as before)
        return True


def _stable(plan: Any) -> bool:
    """Whether every node of the JVM logical ``plan`` is of :data:`_STABLE`'s kinds (a
    cached subtree is one ``InMemoryRelation``, its children not visited)."""
    name = str(plan.nodeName())
    if name not in _STABLE:
        return False
    if name == "InMemoryRelation":
        return True
    children = plan.children()
    return all(_stable(children.apply(i)) for i in range(children.size()))


class SourceCount:
    """The row count of a merge's (id-keyed) source, counted on first use only: the local
    match's rule and a join route's Bloom filter both need it."""

    def __init__(self, keyed: DataFrame) -> None:
        self._keyed = keyed
        self._rows: int | None = None

    def __call__(self) -> int:
        if self._rows is None:
            self._rows = self._keyed.count()
        return self._rows
