#!/usr/bin/env bash
# Builds the .deb packages of the three services (entropy-gateway, entropy-collector,
# entropy-feeder) from built binaries, with dpkg-deb from a staged tree:
#
#   scripts/release/deb.sh BIN_DIR OUT_DIR [ARCH] [VERSION]
#
#   BIN_DIR   holds entropy-gateway, entropy-collector and entropy-feeder (a static build, or
#             target/release for a quick check)
#   ARCH      the Debian architecture of those binaries: amd64 (default) or arm64
#   VERSION   the package version (default: the workspace's, from Cargo.toml)
#
# Each package holds:
#   /usr/bin/<program>                          stripped (debug info is not shipped)
#   /lib/systemd/system/<units>                 deploy/systemd/, ExecStart= at /usr/bin
#   /usr/lib/sysusers.d/<program>.conf          the user and group (deploy/systemd/*.sysusers)
#   /usr/share/doc/<program>/examples/<config>  deploy/systemd/<config>: copy it to /etc/<program>/
#   /usr/share/doc/<program>/copyright          the licence
# and maintainer scripts that make the user (systemd-sysusers, else adduser/useradd) and an
# empty /etc/<program> (root:<program>, 0750) on configure, never enable or start a unit
# (the units are skipped anyway until /etc/<program>/<config> exists), stop the service on
# remove, and on purge remove /etc/<program> if the admin left nothing in it. The user and
# /var/lib/entropy-gateway (the ingest lease: docs/operations.md "The ingest state") are
# kept on purge, as Debian keeps system users.
#
# Why dpkg-deb and not cargo-deb: the packages are mostly systemd files and maintainer
# scripts, not cargo metadata; dpkg-deb is already on every Debian machine (nothing to compile
# or install) and the staged tree is plain to read. The scripts honour DPKG_ROOT, so
# scripts/release/preflight.sh can install them into a scratch root
# (dpkg --root DIR --force-script-chrootless) and run them there.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"

[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
BIN_DIR="$(cd "$1" && pwd)"
mkdir -p "$2"
OUT_DIR="$(cd "$2" && pwd)"
ARCH="${3:-amd64}"
VERSION="${4:-$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml")}"
[ -n "$VERSION" ] || { echo "deb.sh: no version" >&2; exit 2; }
case "$ARCH" in
  amd64) strip_tool="strip" ;;
  arm64) strip_tool=aarch64-linux-gnu-strip ;;
  *) echo "deb.sh: ARCH $ARCH: amd64 or arm64" >&2; exit 2 ;;
esac
command -v "$strip_tool" >/dev/null || strip_tool=""
# gzip is several times quicker than xz on these binaries; the release workflow keeps xz.
COMPRESS="${DEB_COMPRESS:-xz}"
LEVEL="${DEB_LEVEL:-6}"

# package NAME CONFIG SUMMARY DESCRIPTION UNIT...
package() {
  local name="$1" config="$2" summary="$3" description="$4"
  shift 4
  local stage
  stage="$(mktemp -d)"
  chmod 0755 "$stage"
  trap 'rm -rf "$stage"' RETURN

  install -d "$stage/DEBIAN" "$stage/usr/bin" "$stage/lib/systemd/system" \
    "$stage/usr/lib/sysusers.d" "$stage/usr/share/doc/$name/examples"
  [ -x "$BIN_DIR/$name" ] || { echo "deb.sh: no $BIN_DIR/$name" >&2; exit 1; }
  install -m 0755 "$BIN_DIR/$name" "$stage/usr/bin/$name"
  [ -z "$strip_tool" ] || "$strip_tool" --strip-debug "$stage/usr/bin/$name"
  local unit
  for unit in "$@"; do
    # The units as shipped in deploy/systemd/ name /usr/local/bin (an install by hand); a
    # package's binary is in /usr/bin.
    sed 's|/usr/local/bin/|/usr/bin/|g' "$ROOT/deploy/systemd/$unit" >"$stage/lib/systemd/system/$unit"
    chmod 0644 "$stage/lib/systemd/system/$unit"
    ! grep -q /usr/local/ "$stage/lib/systemd/system/$unit" ||
      { echo "deb.sh: $unit still names /usr/local" >&2; exit 1; }
  done
  install -m 0644 "$ROOT/deploy/systemd/$name.sysusers" "$stage/usr/lib/sysusers.d/$name.conf"
  install -m 0644 "$ROOT/deploy/systemd/$config" "$stage/usr/share/doc/$name/examples/$config"
  {
    echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
    echo "Upstream-Name: entropy-diode"
    echo "Source: https://github.com/entropy-diode/entropy-diode"
    echo
    echo "Files: *"
    echo "Copyright: The Entropy Diode authors"
    echo "License: Apache-2.0"
    echo " On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0."
  } >"$stage/usr/share/doc/$name/copyright"

  local units="$*"
  cat >"$stage/DEBIAN/postinst" <<EOF
#!/bin/sh
# $name: make the user and /etc/$name; never enable or start anything (the admin does, once
# /etc/$name/$config and its secrets are in place: README.md "Releases and packages").
set -e
root="\${DPKG_ROOT:-}"
if [ "\$1" = configure ]; then
  if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers --root="\${root:-/}" "\$root/usr/lib/sysusers.d/$name.conf"
  elif ! getent passwd $name >/dev/null && [ -z "\$root" ]; then
    adduser --system --group --no-create-home --home /nonexistent --quiet $name 2>/dev/null ||
      useradd --system --user-group --no-create-home --shell /usr/sbin/nologin $name
  fi
  if [ ! -d "\$root/etc/$name" ]; then
    install -d -m 0750 "\$root/etc/$name"
    chgrp $name "\$root/etc/$name" 2>/dev/null ||
      chgrp "\$(sed -n 's/^$name:[^:]*:\([0-9]*\):.*/\1/p' "\$root/etc/group")" "\$root/etc/$name"
  fi
  if [ -z "\$root" ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
  fi
  echo "$name: installed, not started. Copy /usr/share/doc/$name/examples/$config to /etc/$name/, add its secrets, then: systemctl enable --now ${units%% *}" >&2
fi
EOF
  cat >"$stage/DEBIAN/prerm" <<EOF
#!/bin/sh
set -e
if [ -z "\${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ] && [ "\$1" = remove ]; then
  systemctl stop $units || true
  systemctl disable $units >/dev/null 2>&1 || true
fi
EOF
  cat >"$stage/DEBIAN/postrm" <<EOF
#!/bin/sh
set -e
root="\${DPKG_ROOT:-}"
if [ "\$1" = purge ]; then
  # What the admin put there (config, secrets) is theirs: the directory goes only when empty.
  rmdir "\$root/etc/$name" 2>/dev/null || true
fi
if [ -z "\$root" ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
EOF
  chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"

  local size
  size="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
  cat >"$stage/DEBIAN/control" <<EOF
Package: $name
Version: $VERSION
Architecture: $ARCH
Maintainer: Entropy Diode maintainers <maintainers@entropy-diode.invalid>
Section: net
Priority: optional
Installed-Size: $size
Recommends: systemd
Homepage: https://github.com/entropy-diode/entropy-diode
Description: $summary
$(fold -s -w 76 <<<"$description" | sed 's/^/ /; s/ *$//')
 .
 A static binary (no shared library needed), its systemd units, a sysusers.d
 entry and an example config. Nothing starts until the config is in place.
EOF
  (cd "$stage" && find usr lib -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
  local deb="$OUT_DIR/${name}_${VERSION}_${ARCH}.deb"
  dpkg-deb --root-owner-group -Z"$COMPRESS" -z"$LEVEL" --build "$stage" "$deb" >/dev/null
  echo "$deb ($(stat -c %s "$deb") bytes)"
}

package entropy-gateway gateway.toml \
  "Entropy Diode gateway: verified entropy over gRPC" \
  "Serves verified (quantum) entropy over gRPC, each byte to one caller, once: the collectors publish sealed chunks to its ingest listener, clients draw and stream over TLS with API keys." \
  entropy-gateway.service
package entropy-collector collector.toml \
  "Entropy Diode collector: appliance bytes to the gateways" \
  "Reads entropy appliances (Quantis over HTTPS, hardware RNG devices), health-tests and mixes their bytes, seals chunks with a MAC key and publishes them to the gateways' ingest listeners over mTLS." \
  entropy-collector.service
package entropy-feeder feeder.toml \
  "Entropy Diode feeder: gateway entropy into the kernel RNG" \
  "Feeds health-tested gateway bytes into the kernel's RNG when it asks, and serves them to QEMU guests (virtio-rng) over an EGD socket; a boot unit seeds the kernel once at boot, failing open." \
  entropy-feeder.service entropy-feeder-boot.service
