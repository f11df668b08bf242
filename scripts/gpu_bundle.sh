#!/usr/bin/env bash
# Builds the whole of crosspoint with CUDA (sm_90a only) HERE and packs what the GPU machine
# lacks into .gpu_bundle/ (git-ignored), for scripts/gpu_study.py to unpack there:
#
#   .gpu_bundle/crosspoint-gpu.tar.xz   crosspoint-gpu/
#       bin/<name>         wrappers: set LD_LIBRARY_PATH (bundle lib/ + the machine's cuBLASLt), exec libexec/<name>
#       libexec/<name>     crosspoint, test_kernels_cuda, test_model_cuda, test_analysis, bench_gemm, bench_attention, bench_decode_step, bench_tensor_parallel (those built)
#       lib/               every shared library they need except glibc's and the CUDA driver's / cuBLAS's
#                          (fmt, event, curl and its whole closure, ICU, PCRE2, ..., libstdc++, cudart)
#       env.sh             sourced: finds libcublasLt.so.13 on that machine, sets CROSSPOINT_GPU_LD_PATH and PATH
#       tokenizers/qwen2.5/  the Qwen2.5 tokenizer (from the cache of scripts/setup.sh)
#       datasets/sharegpt_sample.json   the first $SHAREGPT_N ShareGPT conversations (the full file is ~120 MB)
#       tools/             ../shared/tools/gpu/*.py (ceilings.py, torch_peer.py), scripts/gpu/find_cublaslt.py
#       manifest.json      commit, date, build root, binaries, libraries
#   .gpu_bundle/README.txt              how to unpack it by hand
#
#   scripts/gpu_bundle.sh            # then: run(command="python3 scripts/gpu_study.py", carry=[".gpu_bundle"])
#
# The binaries built here run there unchanged: same CUDA 13.0, and a newer glibc there. The
# check at the end resolves every library of the unpacked binaries with only the bundle on
# LD_LIBRARY_PATH and fails if one would come from anywhere but the bundle, glibc or CUDA.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build-gpu-bundle}
BUNDLE=$ROOT/.gpu_bundle
SHAREGPT_N=${SHAREGPT_N:-3000}
# What travels to the device is the tracked tree plus the bundle, 64 MiB at most.
TREE_KIB=$(git ls-files -z | du -c --apparent-size --files0-from=- -k 2>/dev/null | tail -1 | cut -f1)
MAX_BUNDLE_MIB=${MAX_BUNDLE_MIB:-$((63 - TREE_KIB / 1024))}
CACHE="${CROSSPOINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crosspoint}"
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
log() { printf '[gpu_bundle] %s\n' "$*" >&2; }
die() { printf '[gpu_bundle] error: %s\n' "$*" >&2; exit 1; }

EXCLUDE=$(git rev-parse --git-common-dir)/info/exclude  # also right in a git worktree
mkdir -p "$(dirname "$EXCLUDE")"
grep -qx '/.gpu_bundle/' "$EXCLUDE" 2>/dev/null || echo '/.gpu_bundle/' >>"$EXCLUDE"

# Libraries the GPU machine provides itself: glibc, the CUDA driver and cuBLAS(Lt) (found
# there by env.sh). Everything else a binary needs goes into lib/.
SYSTEM_LIBS='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libcuda\.so|libcublas\.so|libcublasLt\.so)'

log "configure $BUILD (Release, CUDA sm_90a)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_ARCHITECTURES=90a -DCROSSPOINT_CUDA=ON >/dev/null \
  || die "cmake configure failed (is nvcc at /usr/local/cuda/bin?)"
# BUNDLE_TARGETS: a shorter list for a call that needs fewer (the tree and the bundle travel
# together, at most 64 MiB); crosspoint always comes first.
WANTED=(crosspoint)
for t in ${BUNDLE_TARGETS:-test_kernels_cuda test_model_cuda test_determinism test_analysis bench_gemm bench_attention bench_decode_step bench_tensor_parallel}; do
  [ "$t" = crosspoint ] || WANTED+=("$t")
done
AVAILABLE=$(ninja -C "$BUILD" -t targets all 2>/dev/null | sed -n 's/^\([A-Za-z0-9_]*\): phony$/\1/p; s/^\([A-Za-z0-9_]*\): .*/\1/p' | sort -u)
TARGETS=()
for t in "${WANTED[@]}"; do
  if grep -qx "$t" <<<"$AVAILABLE"; then TARGETS+=("$t"); else log "target $t does not exist in this tree: skipped"; fi
done
[ "${TARGETS[0]:-}" = crosspoint ] || die "no crosspoint target in $BUILD"
log "build ${TARGETS[*]} (-j2)"
cmake --build "$BUILD" -j2 --target "${TARGETS[@]}" || die "build failed"

STAGE_PARENT=$(mktemp -d /tmp/crosspoint-gpu-stage.XXXXXX)
trap 'rm -rf "$STAGE_PARENT"' EXIT
STAGE=$STAGE_PARENT/crosspoint-gpu
mkdir -p "$STAGE"/{bin,libexec,lib,tokenizers/qwen2.5,datasets,tools}

# Binaries and their wrappers.
BINARIES=()
for t in "${TARGETS[@]}"; do
  path=$(find "$BUILD" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$path" ] || die "built target $t but found no executable named $t under $BUILD"
  cp "$path" "$STAGE/libexec/$t"
  strip --strip-debug "$STAGE/libexec/$t" 2>/dev/null || true
  cat >"$STAGE/bin/$t" <<EOF
#!/usr/bin/env bash
# Runs libexec/$t with the bundle's libraries and this machine's cuBLASLt (env.sh).
d=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")/.." && pwd)
[ -n "\${CROSSPOINT_GPU_LD_PATH:-}" ] || . "\$d/env.sh"
LD_LIBRARY_PATH="\$CROSSPOINT_GPU_LD_PATH\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$d/libexec/$t" "\$@"
EOF
  chmod +x "$STAGE/bin/$t"
  BINARIES+=("$t")
done

# Libraries: ldd gives each binary's whole closure (curl's dependencies included).
declare -A COPIED=()
for t in "${BINARIES[@]}"; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then
      grep -qE "$SYSTEM_LIBS" <<<"$name" || die "$t needs $name, which is not installed here"
      continue
    fi
    grep -qE "$SYSTEM_LIBS" <<<"$name" && continue
    [ -n "${COPIED[$name]:-}" ] && continue
    cp -L "$path" "$STAGE/lib/$name"
    COPIED[$name]=$path
  done < <(ldd "$STAGE/libexec/$t")
done
log "libraries bundled: ${#COPIED[@]} ($(du -sh "$STAGE/lib" | cut -f1) unpacked)"

# env.sh: where this machine keeps libcublasLt.so.13 (toolkit, ld cache, or the pip wheel) and
# libnccl.so.2.
cat >"$STAGE/env.sh" <<'EOF'
# Sourced (bash): sets CROSSPOINT_GPU_ROOT, CROSSPOINT_CUBLASLT_DIR, CROSSPOINT_GPU_LD_PATH,
# CROSSPOINT_NCCL_LIBRARY (where found) and puts the bundle's bin/ first on PATH. Only the
# wrappers in bin/ use CROSSPOINT_GPU_LD_PATH, so Python (torch, transformers) keeps its own
# libraries.
CROSSPOINT_GPU_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export CROSSPOINT_GPU_ROOT
# Sourced into the wrappers' shell: its own variables carry a prefix, so the caller's (the
# wrappers' `d`) survive.
if [ -z "${CROSSPOINT_CUBLASLT_DIR:-}" ]; then
  for crosspoint_dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13.0/lib64 \
           /usr/lib/x86_64-linux-gnu; do
    if [ -e "$crosspoint_dir/libcublasLt.so.13" ]; then CROSSPOINT_CUBLASLT_DIR=$crosspoint_dir; break; fi
  done
fi
if [ -z "${CROSSPOINT_CUBLASLT_DIR:-}" ]; then
  crosspoint_lib=$(ldconfig -p 2>/dev/null | awk '/libcublasLt\.so\.13 / {print $NF; exit}')
  [ -n "$crosspoint_lib" ] && CROSSPOINT_CUBLASLT_DIR=$(dirname "$crosspoint_lib")
fi
if [ -z "${CROSSPOINT_CUBLASLT_DIR:-}" ] && command -v python3 >/dev/null; then
  # the pip wheel nvidia-cublas (torch's): site-packages/nvidia/cu13/lib or nvidia/cublas/lib
  crosspoint_lib=$(python3 "$CROSSPOINT_GPU_ROOT/tools/find_cublaslt.py" 2>/dev/null)
  [ -n "$crosspoint_lib" ] && CROSSPOINT_CUBLASLT_DIR=$crosspoint_lib
fi
if [ -z "${CROSSPOINT_CUBLASLT_DIR:-}" ]; then
  crosspoint_lib=$(timeout 30 find / -xdev -name 'libcublasLt.so.13' 2>/dev/null | head -1)
  [ -n "$crosspoint_lib" ] && CROSSPOINT_CUBLASLT_DIR=$(dirname "$crosspoint_lib")
fi
# NCCL, which a split over GPUs loads at run time (src/model/cuda/nccl_ranks.h): the ld cache,
# else a pip wheel (torch's nvidia-nccl-cu13); too large to bundle.
if [ -z "${CROSSPOINT_NCCL_LIBRARY:-}" ]; then
  crosspoint_lib=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / {print $NF; exit}')
  if [ -z "$crosspoint_lib" ] && command -v python3 >/dev/null; then
    crosspoint_lib=$(python3 -c 'import glob, os, site, sys
for r in site.getsitepackages() + sys.path:
    for hit in glob.glob(os.path.join(r, "nvidia", "*", "lib", "libnccl.so.2")):
        print(hit); raise SystemExit' 2>/dev/null)
  fi
  [ -n "$crosspoint_lib" ] && export CROSSPOINT_NCCL_LIBRARY=$crosspoint_lib
fi
unset crosspoint_dir crosspoint_lib
if [ -z "${CROSSPOINT_CUBLASLT_DIR:-}" ]; then
  echo "crosspoint-gpu/env.sh: libcublasLt.so.13 not found on this machine; set CROSSPOINT_CUBLASLT_DIR" >&2
fi
export CROSSPOINT_CUBLASLT_DIR
export CROSSPOINT_GPU_LD_PATH="$CROSSPOINT_GPU_ROOT/lib${CROSSPOINT_CUBLASLT_DIR:+:$CROSSPOINT_CUBLASLT_DIR}"
case ":$PATH:" in *":$CROSSPOINT_GPU_ROOT/bin:"*) ;; *) export PATH="$CROSSPOINT_GPU_ROOT/bin:$PATH" ;; esac
EOF

# Tokenizer, ShareGPT sample, the shared measurement tools.
TOK=$CACHE/tokenizers/qwen2.5
[ -f "$TOK/tokenizer.json" ] || die "$TOK/tokenizer.json missing (run scripts/setup.sh)"
cp "$TOK"/tokenizer*.json "$STAGE/tokenizers/qwen2.5/"
SHAREGPT=$CACHE/datasets/ShareGPT_V3_complete_subset.json
[ -f "$SHAREGPT" ] || die "$SHAREGPT missing (run scripts/setup.sh)"
python3 "$ROOT/scripts/gpu/sharegpt_sample.py" "$SHAREGPT" "$STAGE/datasets/sharegpt_sample.json" "$SHAREGPT_N"
SHARED_TOOLS=${SHARED_TOOLS:-$ROOT/../shared/tools/gpu}
[ -d "$SHARED_TOOLS" ] || SHARED_TOOLS=/work/shared/tools/gpu
cp "$SHARED_TOOLS"/*.py "$STAGE/tools/" 2>/dev/null || log "no $SHARED_TOOLS/*.py: ceilings and peers will be skipped there"
cp "$ROOT/scripts/gpu/find_cublaslt.py" "$STAGE/tools/"

python3 "$ROOT/scripts/gpu/bundle_manifest.py" "$STAGE" "$ROOT" "$(git rev-parse HEAD)" "$(git status --porcelain | wc -l)"

# The check: unpacked, every library resolves to the bundle, glibc or CUDA (libcuda.so.1
# may be missing here: no driver on this machine).
CHECK=$(mktemp -d /tmp/crosspoint-gpu-check.XXXXXX)
trap 'rm -rf "$STAGE_PARENT" "$CHECK"' EXIT
mkdir -p "$BUNDLE"
# Packed beside the old archive and renamed only once checked, so a device call started
# meanwhile never carries a half-written archive.
PACKED=$BUNDLE/crosspoint-gpu.tar.xz.partial
log "pack (xz)"
tar -C "$STAGE_PARENT" -cf - crosspoint-gpu | xz -T2 -6 >"$PACKED"
tar -C "$CHECK" -xJf "$PACKED"
BAD=0
for t in "${BINARIES[@]}"; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    case "$path" in
      "$CHECK"/crosspoint-gpu/lib/*) ;;
      not) [ "$name" = libcuda.so.1 ] || { log "CHECK: $t: $name not found"; BAD=1; } ;;
      *) grep -qE "$SYSTEM_LIBS" <<<"$name" || { log "CHECK: $t: $name would come from $path, not the bundle"; BAD=1; } ;;
    esac
  done < <(LD_LIBRARY_PATH="$CHECK/crosspoint-gpu/lib" ldd "$CHECK/crosspoint-gpu/libexec/$t")
done
[ $BAD -eq 0 ] || { rm -f "$PACKED"; die "the unpacked bundle is missing libraries (see CHECK lines)"; }
LD_LIBRARY_PATH="$CHECK/crosspoint-gpu/lib" "$CHECK/crosspoint-gpu/libexec/crosspoint" --help >/dev/null \
  || { rm -f "$PACKED"; die "the unpacked crosspoint does not start here"; }
SIZE=$(stat -c %s "$PACKED")
[ "$SIZE" -lt $((MAX_BUNDLE_MIB * 1024 * 1024)) ] || die "bundle is $((SIZE >> 20)) MiB, over $MAX_BUNDLE_MIB MiB (the tracked tree takes $((TREE_KIB / 1024)) MiB of the 64 that travel; BUNDLE_TARGETS names fewer binaries)"
mv "$PACKED" "$BUNDLE/crosspoint-gpu.tar.xz"

cat >"$BUNDLE/README.txt" <<'EOF'
crosspoint-gpu.tar.xz: crosspoint built with CUDA (sm_90a) and the libraries the GPU machine lacks.
Made by scripts/gpu_bundle.sh; used by scripts/gpu_study.py. By hand, on the GPU machine:

  tar -C /tmp -xJf .gpu_bundle/crosspoint-gpu.tar.xz
  . /tmp/crosspoint-gpu/env.sh          # finds libcublasLt.so.13, puts bin/ on PATH
  crosspoint generate --device cuda --model DIR --prompt hi --max-tokens 8
  cat /tmp/crosspoint-gpu/manifest.json # commit, binaries, libraries
EOF
log "done: $BUNDLE/crosspoint-gpu.tar.xz $((SIZE >> 20)) MiB ($SIZE bytes); binaries: ${BINARIES[*]}"
log "every library of the unpacked binaries resolves to the bundle, glibc or CUDA"
