#!/usr/bin/env bash
# Static Linux binaries of what a release ships, for one target, and their tarball:
#
#   scripts/release/static.sh TARGET OUT_DIR [VERSION]
#
#   TARGET   x86_64-unknown-linux-musl or aarch64-unknown-linux-musl
#   OUT_DIR  gets bin-<TARGET>/ (the binaries, for the .deb and the image) and
#            entropy-diode-<VERSION>-<TARGET>.tar.gz
#
# musl, not a static glibc: a static glibc still loads NSS modules (dlopen) for name
# resolution, which must then match the glibc the binary was linked with; musl resolves names
# itself (/etc/hosts, /etc/resolv.conf), so the collector and the feeder, which dial by name,
# work on any distribution. TLS roots are compiled in (webpki-roots): no CA bundle is read.
# The cost: musl's allocator is known to be slower than glibc's under many threads; how much
# that costs this gateway is not measured yet (bench/README.md "Release builds"). The images of
# deploy/Dockerfile, which compose builds from source, stay glibc.
#
# What ships: profile `dist` (release + fat LTO), the gateway without dev mode (its `dev`
# feature: that binary refuses --dev, as the images of deploy/Dockerfile do), the collector
# with the simulator (entropy-simulator, which the collector image and the Helm chart's
# simulator use). PROFILE=release builds quicker, for trying this script.
#
# aarch64 cross-built from x86_64 needs `rustup target add aarch64-unknown-linux-musl` and a
# cross C compiler and linker for ring (Debian: gcc-aarch64-linux-gnu); built on an aarch64
# machine (the release workflow's arm runner) it needs only musl-tools, as x86_64 does.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"

[ $# -ge 2 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
TARGET="$1"
mkdir -p "$2"
OUT_DIR="$(cd "$2" && pwd)"
VERSION="${3:-$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)}"
PROFILE="${PROFILE:-dist}"
BINARIES=(entropy-gateway entropy-collector entropy-simulator entropy-feeder entropy entropy-mcp)

host="$(uname -m)"
case "$TARGET" in
  x86_64-unknown-linux-musl) arch=x86_64 ;;
  aarch64-unknown-linux-musl) arch=aarch64 ;;
  *) echo "static.sh: TARGET $TARGET: x86_64-unknown-linux-musl or aarch64-unknown-linux-musl" >&2; exit 2 ;;
esac
if [ "$arch" != "$host" ]; then
  # Cross: ring's C and assembly through the cross compiler, which also links (Rust's musl
  # target brings its own libc and start files, so a glibc cross toolchain links it statically).
  cc="${arch}-linux-gnu-gcc"
  command -v "$cc" >/dev/null || { echo "static.sh: no $cc (apt-get install gcc-${arch}-linux-gnu)" >&2; exit 3; }
  upper="$(tr 'a-z-' 'A-Z_' <<<"$TARGET")"
  export "CC_${TARGET//-/_}=$cc" "AR_${TARGET//-/_}=${arch}-linux-gnu-ar" "CARGO_TARGET_${upper}_LINKER=$cc"
else
  command -v musl-gcc >/dev/null || { echo "static.sh: no musl-gcc (apt-get install musl-tools)" >&2; exit 3; }
fi
rustup target list --installed 2>/dev/null | grep -qx "$TARGET" || rustup target add "$TARGET"

# Two builds, so that each program gets exactly its features: the gateway without any (on the
# command line, `entropy-collector/simulator` would also switch on the gateway's optional
# dependency on the collector library), the others with their defaults (the collector's is
# `simulator`). The SBOMs (preflight.sh, the workflow) are made with the same features.
cargo build --profile "$PROFILE" --locked --target "$TARGET" -p entropy-gateway --no-default-features
cargo build --profile "$PROFILE" --locked --target "$TARGET" \
  -p entropy-collector -p entropy-feeder -p entropy-diode-cli -p entropy-mcp

built="${CARGO_TARGET_DIR:-target}/$TARGET/$PROFILE"
bin="$OUT_DIR/bin-$TARGET"
rm -rf "$bin"
mkdir -p "$bin"
for b in "${BINARIES[@]}"; do
  cp "$built/$b" "$bin/$b"
  # Static: no program interpreter, no shared library needed.
  if readelf -lW "$bin/$b" | grep -q 'Requesting program interpreter' ||
    readelf -dW "$bin/$b" | grep -q '(NEEDED)'; then
    echo "static.sh: $b is dynamically linked" >&2; readelf -dW "$bin/$b" | grep NEEDED >&2; exit 1
  fi
  machine="$(readelf -hW "$bin/$b" | sed -n 's/^ *Machine: *//p')"
  case "$arch:$machine" in
    x86_64:*X86-64*|aarch64:*AArch64*) ;;
    *) echo "static.sh: $b is for $machine, not $arch" >&2; exit 1 ;;
  esac
done
# Each runs: natively, or under QEMU's user-mode emulation when it is installed (Debian:
# qemu-user-static).
run=()
if [ "$arch" != "$host" ]; then
  run=("qemu-$arch-static")
  command -v "${run[0]}" >/dev/null || run=()
fi
if [ "$arch" = "$host" ] || [ ${#run[@]} -gt 0 ]; then
  for b in "${BINARIES[@]}"; do "${run[@]}" "$bin/$b" --help >/dev/null; done
  # Built without dev mode, it refuses --dev with 64 (a dev build would start serving: 124).
  rc=0
  timeout 5 "${run[@]}" "$bin/entropy-gateway" --dev >/dev/null 2>&1 || rc=$?
  [ "$rc" = 64 ] || { echo "static.sh: the release gateway took --dev (exit $rc, not 64)" >&2; exit 1; }
  echo "static, $arch: ${BINARIES[*]} ($(du -sh "$bin" | cut -f1)); each ran --help${run[*]:+ under ${run[*]}}"
else
  echo "static, $arch: ${BINARIES[*]} ($(du -sh "$bin" | cut -f1)); not run (no qemu-$arch-static)"
fi

# The tarball: the binaries (debug info kept out), the licence, the README and the systemd files.
name="entropy-diode-$VERSION-$TARGET"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name/bin" "$stage/$name/systemd"
strip_tool="strip"
[ "$arch" = "$host" ] || strip_tool="${arch}-linux-gnu-strip"
for b in "${BINARIES[@]}"; do
  cp "$bin/$b" "$stage/$name/bin/"
  "$strip_tool" --strip-debug "$stage/$name/bin/$b"
done
cp LICENSE README.md "$stage/$name/"
cp deploy/systemd/* "$stage/$name/systemd/"
tar -C "$stage" --owner=0 --group=0 --numeric-owner --sort=name \
  --mtime="@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}" -czf "$OUT_DIR/$name.tar.gz" "$name"
echo "$OUT_DIR/$name.tar.gz ($(stat -c %s "$OUT_DIR/$name.tar.gz") bytes)"
