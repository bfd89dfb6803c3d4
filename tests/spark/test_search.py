"""``lance_partitioned.spark.search``: queries searched on executors equal ``ns.search`` run
per query on the driver."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import SparkSession

import lance_partitioned.spark
from lance_partitioned.spark.search import QUERY_ID
from tests.search.helpers import namespace

pytestmark = pytest.mark.spark


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_spark_search_equals_ns_search_per_query(spark: SparkSession, tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns", sizes={"a": 30, "b": 5, "c": 12})
    ns.create_index("grp", "BTREE")
    queries = [(10, [0.0, 0.0, 0.0, 0.0]), (11, [1.0, -2.0, 3.0, 0.0]), (12, [3.0, 3.0, 3.0, 3.0])]
    frame = spark.createDataFrame(queries, "qid long, v array<float>").repartition(2)
    got = lance_partitioned.spark.search(
        spark,
        ns.uri,
        frame,
        column="v",
        k=4,
        filter="tenant != 'b' AND grp < 5",
        id_column="qid",
        columns=["id", "tenant"],
    )
    assert got.columns == [QUERY_ID, "id", "tenant", "_distance", "_partition"]
    rows = sorted(
        (r[QUERY_ID], r["_distance"], r["id"], r["tenant"], r["_partition"]) for r in got.collect()
    )
    expected = []
    for qid, vector in queries:
        hits = ns.search(
            np.asarray(vector, np.float32),
            column="v",
            k=4,
            filter="tenant != 'b' AND grp < 5",
            columns=["id", "tenant"],
        )
        for hit in hits.to_pylist():
            expected.append((qid, hit["_distance"], hit["id"], hit["tenant"], hit["_partition"]))
    assert rows == sorted(expected)
    assert len(rows) == 12
