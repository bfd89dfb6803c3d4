"""MkDocs hook: Sphinx cross-reference roles in docstrings shown as plain code.

The docstrings are numpy style, read by Sphinx-aware tools and by ``help()``, and some name
other objects with Sphinx roles (``:class:`~lance_partitioned.errors.CastError```).
mkdocstrings renders the role name as text before the code span; this hook drops it, and for
a ``~`` target keeps only the last component, as Sphinx shows it.

>>> strip_roles("raises :class:<code>~lance_partitioned.errors.CastError</code>.")
'raises <code>CastError</code>.'
>>> strip_roles("see :func:<code>lance_partitioned.sizes.partition_sizes</code>")
'see <code>lance_partitioned.sizes.partition_sizes</code>'
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):\s*<code>(?P<tilde>~?)"
    r"(?P<target>[^<]*)</code>"
)


def _shown(match: re.Match[str]) -> str:
    target = match.group("target")
    if match.group("tilde"):
        target = target.rsplit(".", 1)[-1]
    return f"<code>{target}</code>"


def strip_roles(html: str) -> str:
    """``html`` with every rendered Sphinx role reduced to its code span."""
    return _ROLE.sub(_shown, html)


def on_page_content(html: str, **kwargs: Any) -> str:
    """Rewrite the rendered page (MkDocs event)."""
    return strip_roles(html)
