#!/usr/bin/env bash
# Formats every C++/CUDA source with the pinned clang-format (scripts/requirements.txt) and
# the repo's .clang-format; the CTest `source_format` checks the same.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
install_python_env
find src tests benchmarks \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
  xargs -0 "$VENV/bin/clang-format" --style=file:.clang-format -i
log "formatted with $("$VENV/bin/clang-format" --version)"
