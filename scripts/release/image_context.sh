#!/usr/bin/env bash
# Stages the build context of deploy/Dockerfile.release from static binaries:
#
#   scripts/release/image_context.sh OUT_DIR BIN_DIR_AMD64 [BIN_DIR_ARM64]
#
# OUT_DIR gets linux-amd64/ (and linux-arm64/) with the image programs, stripped, etc/passwd
# and etc/group naming the one user (entropy, 10001, no shell, no home), empty skel/var/lib/ and state/ (0700).
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,7p' "$0" >&2; exit 2; }
out="$1"
rm -rf "$out"
mkdir -p "$out/etc" "$out/state" "$out/skel/var/lib"
chmod 0700 "$out/state"
chmod 0755 "$out/skel" "$out/skel/var" "$out/skel/var/lib"
printf 'root:x:0:0:root:/:/sbin/nologin\nentropy:x:10001:10001:Entropy Diode:/nonexistent:/sbin/nologin\n' >"$out/etc/passwd"
printf 'root:x:0:\nentropy:x:10001:\n' >"$out/etc/group"
stage() { # stage ARCH BIN_DIR STRIP
  mkdir -p "$out/linux-$1"
  for b in entropy-gateway entropy-collector entropy-simulator entropy-feeder; do
    [ -x "$2/$b" ] || { echo "image_context.sh: no $2/$b" >&2; exit 1; }
    cp "$2/$b" "$out/linux-$1/$b"
    "$3" --strip-debug "$out/linux-$1/$b"
  done
}
stage amd64 "$2" "$( [ "$(uname -m)" = x86_64 ] && echo strip || echo x86_64-linux-gnu-strip)"
[ -z "${3:-}" ] || stage arm64 "$3" "$( [ "$(uname -m)" = aarch64 ] && echo strip || echo aarch64-linux-gnu-strip)"
echo "image context: $out ($(ls "$out" | tr '\n' ' '))"
