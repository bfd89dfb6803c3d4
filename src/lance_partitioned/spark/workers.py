"""Keep PySpark's per-call garbage collection cheap in the Python workers that run us.

A reused PySpark worker (``spark.python.worker.reuse``, the default) runs ``gc.collect()``
after every call it serves (``pyspark/daemon.py``). Once Lance, pyarrow, datafusion and the
``lance_namespace`` models are imported, that collection walks about 160,000 objects: 40 to
100 ms of CPU after every planning call and every task, paid on the same two cores the next
task needs. Those objects are modules, classes and caches that live as long as the worker.

:func:`freeze_worker_heap` moves every object alive at the start of a call into the
collector's permanent generation (:func:`gc.freeze`, constant time), so the collections that
follow walk only what the call itself allocated. Reference counting still frees every frozen
object that stops being used; only a reference cycle that was already garbage when frozen is
kept for the worker's life. It acts in PySpark worker processes only (PySpark sets
``SPARK_PYTHON_RUNTIME=PYTHON_WORKER`` there): a driver, a notebook or a test process keeps
its collector as it is.

>>> import gc
>>> before = gc.get_freeze_count()
>>> freeze_worker_heap()  # in a driver or a test: does nothing
False
>>> gc.get_freeze_count() == before
True
"""

from __future__ import annotations

import gc
import os

__all__ = ["freeze_worker_heap", "in_pyspark_worker"]


def in_pyspark_worker() -> bool:
    """True in a process PySpark started to run Python for a task or a planning call."""
    return os.environ.get("SPARK_PYTHON_RUNTIME") == "PYTHON_WORKER"


def freeze_worker_heap() -> bool:
    """In a PySpark worker, move every live object to the permanent GC generation.

    Called at the start of every entry point Spark calls (planning, reading, writing,
    committing). Returns whether it froze anything (False outside a PySpark worker).
    """
    if not in_pyspark_worker():
        return False
    gc.freeze()
    return True
