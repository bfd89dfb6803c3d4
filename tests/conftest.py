"""Shared settings and fixtures. Spark workers run this interpreter; a real S3-compatible server
on 127.0.0.1 (moto's server, over HTTP) is started once, by the first test that asks for it
(once per pytest-xdist worker, on a port the OS picks)."""

from __future__ import annotations

import logging
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    import lance_partitioned as lp

# Spark workers must run the project's interpreter (they need pyarrow and pylance).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


BUCKET = "lance-partitioned-tests"

# Hypothesis profiles: "default" keeps every test's example count; "fast" (the inner loop,
# `scripts/test --fast` sets HYPOTHESIS_PROFILE=fast) runs 10 examples where a test does not
# say, and a tenth of what the property tests say (tests.property.strategies.examples).
settings.register_profile("fast", max_examples=10)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``spark`` every test that asks for the ``spark`` fixture (a SparkSession), so that
    ``-m "not spark"`` (``scripts/test --fast``) leaves out every test that starts a JVM, and
    put them in the ``xdist_group`` ``spark``: under ``--dist loadgroup`` one worker runs them
    all, so one JVM starts per run instead of one per worker (``scripts/test`` keeps
    ``worksteal``: on ``tests/spark`` both took the same wall).

    Under pytest-xdist (``scripts/test`` runs ``-n 2 --dist worksteal``), start the longest
    tests first.

    The ``slow`` tests go first, those with the longest ``timeout`` mark (the streaming kill
    job, the quickstart's Spark job, the ``local-cluster`` job) at their head: the worker that
    runs them hands its shorter tests to the other one, and a run does not end with one of
    them on one worker while the other one idles. A run without xdist keeps the collection
    order.
    """
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.xdist_group("spark"))
    if os.environ.get("HYPOTHESIS_PROFILE") == "fast":
        _sample_matrices(config, items)
    if "PYTEST_XDIST_WORKER" in os.environ:
        items.sort(key=_longest_first)  # stable: the collection order within each rank


def _sample_matrices(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The inner loop (the ``fast`` profile) runs one case in ``stride`` of a test marked
    ``matrix(stride)`` (its first case, then every ``stride``-th in collection order; the same
    on every xdist worker); the others are reported as deselected. The full run, and CI, run
    every case."""
    seen: dict[str, int] = {}
    kept, dropped = [], []
    for item in items:
        mark = item.get_closest_marker("matrix")
        if mark is None:
            kept.append(item)
            continue
        function = item.nodeid.split("[", 1)[0]
        index = seen[function] = seen.get(function, -1) + 1
        (kept if index % int(mark.args[0]) == 0 else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _longest_first(item: pytest.Item) -> tuple[bool, float]:
    timeout = item.get_closest_marker("timeout")
    seconds = float(timeout.args[0]) if timeout is not None and timeout.args else 0.0
    return item.get_closest_marker("slow") is None, -seconds


@pytest.fixture
def appendix_a_namespace(tmp_path: Path) -> lp.PartitionedNamespace:
    """The namespace of spec 000 Appendix A, built through the API in ``tmp_path``: v1
    ``event_date`` with one row, v2 ``year(event_date) AS event_year, country`` with one row
    (``tests.appendix.build_appendix_a``; the JSON of the appendix is ``tests.appendix``)."""
    from tests.appendix import build_appendix_a

    return build_appendix_a(tmp_path / "appendix_a")


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    # credentials of the test server only, never the machine's
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    s3_client(endpoint).create_bucket(Bucket=BUCKET)
    yield endpoint
    server.stop()


def s3_client(endpoint: str) -> Any:
    """A boto3 client of the test server (to look at the bucket behind the library's back)."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    )


@pytest.fixture
def storage_options(s3_endpoint: str) -> dict[str, str]:
    return {
        "aws_endpoint": s3_endpoint,
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
        "aws_region": "us-east-1",
        "allow_http": "true",
    }


@pytest.fixture
def s3_uri() -> str:
    """A fresh prefix in the test bucket for each test."""
    return f"s3://{BUCKET}/{uuid.uuid4().hex}/ns"
