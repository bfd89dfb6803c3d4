"""lance-partitioned: the Lance Partitioned Namespace format (spec 000).

A partitioned namespace is a directory namespace whose ``__manifest`` Lance table carries
partition specs and a shared schema; its leaf tables are plain Lance datasets that are
queried together as one dataset.
"""

from __future__ import annotations

from lance_partitioned import errors

__all__ = ["__version__", "errors"]
__version__ = "0.1.0"
