"""Shared fixtures: small real namespaces on disk (no mocks)."""

from __future__ import annotations

import os
import sys

# Spark workers must run the project's interpreter (they need pyarrow and pylance).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
