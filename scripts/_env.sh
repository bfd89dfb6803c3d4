# Shared by scripts/demo and scripts/test: find Python 3.10+ and Java, make .venv, install.
# Idempotent: a second run reuses .venv and only reinstalls when pyproject.toml changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for candidate in python3.13 python3.12 python3.11 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
      PYTHON="$(command -v "$candidate")"; break
    fi
  done
fi
if [ -z "$PYTHON" ]; then
  echo "error: Python 3.10 or newer is required (set PYTHON=/path/to/python3)" >&2; exit 1
fi

if ! command -v java >/dev/null 2>&1; then
  echo "error: Java 17 is required for Spark. On Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo ">> creating .venv with $PYTHON"
  "$PYTHON" -m venv .venv
fi
EXTRAS="${EXTRAS:-spark,dev,s3,docs,interop}"
STAMP=.venv/.installed-$( (cat pyproject.toml; echo "$EXTRAS") | cksum | cut -d' ' -f1)
if [ ! -f "$STAMP" ]; then
  echo ">> installing lance-partitioned with extras [$EXTRAS] (first run takes a minute)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[$EXTRAS]"
  rm -f .venv/.installed-*
  touch "$STAMP"
fi
export PYSPARK_PYTHON="$ROOT/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$ROOT/.venv/bin/python"
