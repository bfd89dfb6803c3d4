"""The pure spec core: types, schema, transforms and partition specs.

Nothing under ``lance_partitioned.spec`` imports lance, pyspark or any CLI library.
"""
