"""Maintenance of a partitioned namespace: compaction (``optimize``) and retention (``cleanup``)."""
