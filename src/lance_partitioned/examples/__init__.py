"""Runnable examples built on the library, not part of its API: the demo pipeline
(:mod:`lance_partitioned.examples.demo`, ``scripts/demo``) needs PySpark, which the library
itself imports only in :mod:`lance_partitioned.spark`."""
