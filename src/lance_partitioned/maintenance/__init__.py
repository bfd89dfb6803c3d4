"""Maintenance of a partitioned namespace: compacting it (``optimize``) and removing what no
retained version needs (:mod:`~lance_partitioned.maintenance.cleanup`)."""
