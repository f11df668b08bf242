#!/usr/bin/env bash
# The SASS of a compiled CUDA object, with a per-kernel summary: what `-Xptxas -v` does not say
# (where the spills are, how many instructions a loop spends per MMA). A developer's tool; CI
# does not run it.
#
#   scripts/sass.sh OBJECT [KERNEL-REGEX]
#     OBJECT: a .o from the build (e.g. build/src/kernels/CMakeFiles/crosspoint_kernels.dir/cuda/
#             paged_attention_prefill.cu.o) or any cubin / fatbin cuobjdump reads
#     KERNEL-REGEX: only kernels whose demangled name matches (grep -E)
#   Prints, per kernel: its demangled name, instructions in all, and the counts of the opcodes
#   that decide a kernel's speed (HMMA / HGMMA, LDSM, LDS / STS, LDG / LDGSTS / UTMALDG, STL / LDL
#   = spills, BAR, MUFU, SHFL); the whole listing goes to OBJECT.sass beside the object.
#
# cuobjdump and nvdisasm come from PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels
# (pinned, checksummed, unpacked once into the cache), since the CUDA toolkit here has nvcc and
# ptxas but not them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

CUDA_BINUTILS_VERSION=13.5.37
CUOBJDUMP_WHEEL_SHA256=38780fee50863252a0b8926357faa91615ca1c8346490563f33a06100cd73f58
NVDISASM_WHEEL_SHA256=d3fdbdd49fa53e2e4aacd3db8259d052bd2b049ececdcb69e92e083c6728e7ca

[ $# -ge 1 ] || die "usage: scripts/sass.sh OBJECT [KERNEL-REGEX]"
object="$1"
pattern="${2:-.}"
[ -s "$object" ] || die "$object: no such file (build it first)"

# fetch_tool PACKAGE SHA256 BINARY: the wheel's bin/BINARY, unpacked under the cache.
fetch_tool() {
  local package="$1" sha="$2" binary="$3"
  local out="$CACHE/third_party/cuda-binutils-$CUDA_BINUTILS_VERSION"
  [ -x "$out/$binary" ] && return 0
  local dir="$DOWNLOADS/$package" wheel_name="${package//-/_}-$CUDA_BINUTILS_VERSION"
  mkdir -p "$dir" "$out"
  if ! ls "$dir/$wheel_name"-*.whl >/dev/null 2>&1; then
    log "fetching $package $CUDA_BINUTILS_VERSION from PyPI"
    local pip="$VENV/bin/pip"
    [ -x "$pip" ] || pip="pip3"
    "$pip" download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 -d "$dir" \
      "$package==$CUDA_BINUTILS_VERSION" || die "could not download $package==$CUDA_BINUTILS_VERSION from PyPI"
  fi
  local wheel
  wheel=$(ls "$dir/$wheel_name"-*.whl | head -1)
  echo "$sha  $wheel" | sha256sum -c --quiet - || die "$wheel does not have the expected sha256: delete it and run again"
  unzip -q -o -j "$wheel" "nvidia/cu13/bin/$binary" -d "$out" || die "$wheel lacks bin/$binary"
  chmod +x "$out/$binary"
}

fetch_tool nvidia-cuda-cuobjdump "$CUOBJDUMP_WHEEL_SHA256" cuobjdump
fetch_tool nvidia-cuda-nvdisasm "$NVDISASM_WHEEL_SHA256" nvdisasm
tools="$CACHE/third_party/cuda-binutils-$CUDA_BINUTILS_VERSION"

listing="$object.sass"
PATH="$tools:$PATH" NVDISASM_PATH="$tools" "$tools/cuobjdump" -sass "$object" >"$listing" \
  || die "cuobjdump could not read $object"
grep -q "Function :" "$listing" || die "no SASS in $object (see $listing)"

# One block per kernel: "Function : NAME" then one line per instruction ("/*addr*/ OPCODE ...").
awk -v pattern="$pattern" '
  function flush() {
    if (name == "") return
    cmd = "c++filt \"" name "\""; cmd | getline demangled; close(cmd)
    if (demangled !~ pattern) return
    printf "%s\n  %d instructions:", demangled, total
    n = split("HMMA HGMMA LDSM LDS STS LDG LDGSTS UTMALDG STL LDL BAR MUFU SHFL", keys, " ")
    for (i = 1; i <= n; ++i) if (count[keys[i]] > 0) printf " %s %d", keys[i], count[keys[i]]
    printf "\n"
  }
  /Function :/ { flush(); name = $3; total = 0; delete count; next }
  /^ +\/\*[0-9a-f]+\*\/ +[A-Z@!]/ {
    op = $2
    if (op ~ /^@/) op = $3  # a predicated instruction: the opcode follows the predicate
    sub(/\..*/, "", op); sub(/;$/, "", op)
    ++total; ++count[op]
  }
  END { flush() }
' "$listing"
log "listing: $listing"
