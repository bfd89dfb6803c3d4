"""``python -m lance_partitioned``: the ``lance-partitioned`` command line."""

from lance_partitioned.cli import main

if __name__ == "__main__":
    main()
