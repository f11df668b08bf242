#!/usr/bin/env bash
# An older commit's bench_decode_step as a --baseline bundle for scripts/gpu_study.py that is a
# few MB instead of a whole bundle: the binary, a wrapper, and an env.sh that borrows the current
# bundle's libraries (unpacked at /tmp/crosspoint-gpu on the GPU machine). Only for commits that
# need no library the current bundle lacks (checked here against its manifest).
# BINARIES="bench_decode_step bench_gemm" packs more of its benchmarks, each as bin/NAME.
#
#   scripts/gpu/thin_baseline.sh COMMIT [OUT]     # OUT: .gpu_bundle/baseline-<commit>.tar.xz
#   then: run(command="python3 scripts/gpu_study.py --only decode --baseline .gpu_bundle/baseline-<commit>.tar.xz", ...)
#
# Builds COMMIT's bench_decode_step in a git worktree under /tmp (ccache makes it quick when
# little changed) after scripts/gpu_bundle.sh has made the current bundle.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
COMMIT=$(git -C "$ROOT" rev-parse "${1:?usage: thin_baseline.sh COMMIT [OUT]}")
SHORT=${COMMIT:0:7}
OUT=${2:-$ROOT/.gpu_bundle/baseline-$SHORT.tar.xz}
BUNDLE=$ROOT/.gpu_bundle/crosspoint-gpu.tar.xz
[ -f "$BUNDLE" ] || { echo "thin_baseline: run scripts/gpu_bundle.sh first" >&2; exit 1; }
BINARIES=${BINARIES:-bench_decode_step}
TREE=/tmp/crosspoint-baseline-$SHORT
[ -d "$TREE" ] || git -C "$ROOT" worktree add -f "$TREE" "$COMMIT" >/dev/null
export CCACHE_BASEDIR="$TREE" CCACHE_NOHASHDIR=1
cmake -S "$TREE" -B "$TREE/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_ARCHITECTURES=90a -DCROSSPOINT_CUDA=ON >/dev/null
# shellcheck disable=SC2086
ninja -C "$TREE/build" -j2 $BINARIES >/dev/null

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
tar -C "$STAGE" -xJf "$BUNDLE" crosspoint-gpu/manifest.json
D=$STAGE/crosspoint-gpu
mkdir -p "$D/bin" "$D/libexec"
cat >"$D/env.sh" <<'EOF'
# The current bundle's libraries and cuBLASLt (its env.sh).
. /tmp/crosspoint-gpu/env.sh
EOF
for name in $BINARIES; do
  BIN=$TREE/build/benchmarks/gpu/$name
  # Every library the old binary needs must be in the current bundle (or the machine's own).
  missing=$(ldd "$BIN" | awk '{print $1}' | grep -vE '^(linux-vdso|/lib64/ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libcublas)' |
    while read -r lib; do grep -q "\"$lib\"" "$D/manifest.json" || echo "$lib"; done)
  [ -z "$missing" ] || { echo "thin_baseline: the current bundle lacks $missing" >&2; exit 1; }
  cp "$BIN" "$D/libexec/$name"
  sed "s/NAME/$name/" >"$D/bin/$name" <<'EOF'
#!/usr/bin/env bash
d=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$d/env.sh"
LD_LIBRARY_PATH="$CROSSPOINT_GPU_LD_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/libexec/NAME" "$@"
EOF
  chmod +x "$D/bin/$name"
done
names=$(printf '"%s", ' $BINARIES)
printf '{\n "commit": "%s",\n "thin_baseline": true,\n "binaries": [%s]\n}\n' "$COMMIT" "${names%, }" >"$D/manifest.json"
tar -C "$STAGE" -cJf "$OUT" crosspoint-gpu
echo "thin_baseline: $OUT ($(du -h "$OUT" | cut -f1)), $BINARIES of $SHORT"
