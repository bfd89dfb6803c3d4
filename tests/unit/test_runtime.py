"""Process settings made on import: only when the user has not made them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lance_partitioned import runtime


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("LANCE_LOG", "LANCE_CPU_THREADS", "LANCE_IO_CORE_RESERVATION"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(("cpus", "expected"), [(1, "1"), (2, "2"), (3, "3"), (4, None)])
def test_small_machines_encode_on_every_cpu(
    clean_env: pytest.MonkeyPatch, cpus: int, expected: str | None
) -> None:
    clean_env.setattr(os, "cpu_count", lambda: cpus)
    runtime.configure_lance()
    assert os.environ.get("LANCE_CPU_THREADS") == expected
    assert os.environ["LANCE_LOG"] == "warn,lance::dataset::write::insert=error"


@pytest.mark.parametrize(
    "setting",
    [("LANCE_CPU_THREADS", "1"), ("LANCE_IO_CORE_RESERVATION", "0"), ("LANCE_LOG", "info")],
)
def test_user_settings_are_kept(clean_env: pytest.MonkeyPatch, setting: tuple[str, str]) -> None:
    clean_env.setattr(os, "cpu_count", lambda: 2)
    clean_env.setenv(*setting)
    runtime.configure_lance()
    assert os.environ[setting[0]] == setting[1]
    if setting[0] != "LANCE_LOG":
        assert os.environ.get("LANCE_CPU_THREADS", "1") == "1"


def test_import_configures_lance_before_lance_is_imported() -> None:
    code = (
        "import os, sys; import lance_partitioned; "
        "print(os.environ.get('LANCE_LOG'), 'lance' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANCE_")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["warn,lance::dataset::write::insert=error", "False"]


def test_reads_and_writes_share_one_default_thread_count() -> None:
    from lance_partitioned.ingest import WriteOptions

    assert 2 <= runtime.DEFAULT_THREADS <= 8
    assert WriteOptions().threads == runtime.DEFAULT_THREADS
