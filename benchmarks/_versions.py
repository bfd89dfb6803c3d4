"""The installed versions that benchmark reports name."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def package_version(package: str) -> str:
    """``package``'s installed version, or ``(not installed)`` (the peers are optional).

    >>> package_version("no-such-package-here")
    '(not installed)'
    """
    try:
        return version(package)
    except PackageNotFoundError:
        return "(not installed)"
