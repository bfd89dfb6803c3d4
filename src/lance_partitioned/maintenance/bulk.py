"""Deleting many objects in few requests on S3: DeleteObjects (up to 1,000 keys a request)
through ``obstore``, the Python binding of the ``object_store`` crate that Lance itself uses.

Neither ``pyarrow.fs`` (one ``DeleteObject`` per file, or a whole prefix) nor pylance's
``LanceFileSession`` (one file per call) deletes a list of keys at once: a cleanup of 110
changed leaves made 287 ``POST ?delete`` requests, one per file
(``benchmarks/objectstore.py``). ``obstore`` is optional (the ``s3`` extra): without it, or
when the storage options hold a key it does not know, :func:`bulk_deleter` returns None and
files go one by one as before.

Lance's storage options are ``object_store``'s configuration keys (``aws_endpoint``,
``aws_access_key_id``, ``allow_http``, …), the same ``obstore`` takes: the client's keys go to
its ``client_options``, Lance's own keys are left out, every other key is S3's.

>>> bulk_deleter("/tmp/somewhere", {}) is None  # a local disk: none
True
>>> _split({"AWS_REGION": "eu-west-1", "allow_http": "true", "download_retry_count": "3"})
({'aws_region': 'eu-west-1'}, {'allow_http': 'true'})
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["bulk_deleter"]

log = logging.getLogger(__name__)

#: ``object_store``'s HTTP client keys (``obstore``'s ``ClientConfig``): not S3 keys.
_CLIENT_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "http1_only",
        "http2_keep_alive_interval",
        "http2_keep_alive_timeout",
        "http2_keep_alive_while_idle",
        "http2_only",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "randomize_addresses",
        "read_timeout",
        "timeout",
        "user_agent",
    }
)
#: Lance's own storage options, which ``object_store`` does not take.
_LANCE_KEYS = frozenset(
    {
        "download_retry_count",
        "client_max_retries",
        "client_retry_timeout",
        "expires_at_millis",
        "aws_s3_express",
        "s3_express",
        "use_opendal",
        "max_retries",
        "retry_timeout",
    }
)

Deleter = Callable[[Sequence[str]], None]


def _split(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Lance storage options as ``obstore``'s S3 configuration and client options."""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, value in options.items():
        name = key.lower()
        if name in _LANCE_KEYS:
            continue
        (client if name in _CLIENT_KEYS else config)[name] = str(value)
    return config, client


def bulk_deleter(root: str, options: Mapping[str, str]) -> Deleter | None:
    """A function that deletes a list of paths (relative to ``root``) in DeleteObjects
    requests of up to 1,000 keys, a missing key not being an error; None when ``root`` is
    not on S3, ``obstore`` is not installed, or it refuses the storage options."""
    if not root.startswith(("s3://", "s3a://")):
        return None
    try:
        obstore: Any = importlib.import_module("obstore")
        aws: Any = importlib.import_module("obstore.store")
    except ImportError:
        return None
    config, client = _split(options)
    try:
        store = aws.S3Store.from_url(root, config=config, client_options=client)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # an option obstore does not take (or misreads: a client
        # key among the S3 ones is a Rust panic, a BaseException): one file at a time then
        log.info("no bulk deletion at %s (%s): files are deleted one by one", root, exc)
        return None

    def delete(paths: Sequence[str]) -> None:
        if paths:
            obstore.delete(store, list(paths))

    return delete
