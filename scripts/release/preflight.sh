#!/usr/bin/env bash
# What a maintainer runs before pushing a release tag: every step of .github/workflows/release.yml
# that can run on this machine, with the same scripts, and nothing published.
#
#   scripts/release/preflight.sh            everything (tens of minutes: two LTO builds)
#   scripts/release/preflight.sh --quick    the .debs from target/release (scripts/test.sh's
#                                           build_release), installed into a scratch root,
#                                           their units verified, removed and purged (~10 s)
#
#   VERSION=0.2.0      the version to stamp (default: the workspace's, Cargo.toml)
#   DIST=DIR           where the artifacts go (default: $CARGO_TARGET_DIR/release-artifacts,
#                      else target/release-artifacts)
#   TARGETS="..."      default "x86_64-unknown-linux-musl aarch64-unknown-linux-musl"
#   PROFILE=release    quicker static builds than the shipped `dist` (trying the script only)
#
# Full run, in order (each step prints SKIP: and the reason when this machine cannot do it):
#   0. every package's version is VERSION (scripts/release/versions.sh, as the workflow checks
#      against the tag);
#   1. actionlint on .github/workflows/ (ACTIONLINT_VERSION, installed with go install), which
#      also runs ShellCheck (from apt) on each step's script;
#   2. the client packages' builds, each installed the way its README says
#      (scripts/package_check.sh), and the Maven Central jars (mvn -P release package: sources
#      and javadoc; signing and the upload are the workflow's);
#   3. the SBOM of each shipped program (scripts/release/sbom.sh: cargo cyclonedx);
#   4. per target: static binaries and tarball (scripts/release/static.sh), .deb packages
#      (scripts/release/deb.sh), and for amd64 the .debs installed with dpkg into a scratch
#      root (DPKG_ROOT: their maintainer scripts run against it), each installed unit through `systemd-analyze verify`, nothing
#      enabled or started, then `dpkg -r` and `dpkg --purge`, leaving none of their files;
#   5. the release images (deploy/Dockerfile.release) with buildah (vfs storage, chroot
#      isolation: no daemon), for each built architecture, and each image's program run from
#      its root filesystem (amd64);
#   6. SHA256SUMS of the artifacts, checked.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"

QUICK=""
[ "${1:-}" = "--quick" ] && QUICK=1
VERSION="${VERSION:-$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
# Not $TARGET_DIR/dist: that is cargo's own directory of the `dist` profile (removed below).
DIST="${DIST:-$TARGET_DIR/release-artifacts}"
TARGETS="${TARGETS:-x86_64-unknown-linux-musl aarch64-unknown-linux-musl}"
ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.12}"
CYCLONEDX_VERSION=0.5.9 # as .github/workflows/release.yml
SERVICES=(entropy-gateway entropy-collector entropy-feeder)

started=$SECONDS
step() { printf '\n==> [%ds] %s\n' $((SECONDS - started)) "$*"; }
fail() { printf 'preflight: FAIL: %s\n' "$*" >&2; exit 1; }
skip() { printf 'SKIP: %s\n' "$*"; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

apt_install() { # apt_install PACKAGE...: the missing ones, quietly
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

# install_check DEB_DIR ARCH: step 4 on the .debs of DEB_DIR.
install_check() {
  local debs=("$1"/*_"$2".deb) root="$tmp/dpkg-root" d
  [ -e "${debs[0]}" ] || fail "no .deb in $1"
  [ "$(id -u)" = 0 ] || { skip "dpkg into a scratch root needs root"; return; }
  command -v systemd-analyze >/dev/null || apt_install systemd

  step "dpkg -i into a scratch root: $(basename -a "${debs[@]}" | tr '\n' ' ')"
  rm -rf "$root"
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/etc"
  touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\n' >"$root/etc/group"
  # --force-script-chrootless: the maintainer scripts run here with DPKG_ROOT set, as a
  # bootstrap tool runs them (the scratch root has no shell to chroot into).
  local dpkg=(dpkg --root="$root" --force-script-chrootless --log=/dev/null)
  "${dpkg[@]}" -i "${debs[@]}" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -i"; }
  for d in "${SERVICES[@]}"; do
    "${dpkg[@]}" -s "$d" | grep -qx 'Status: install ok installed' || fail "$d not installed"
    [ -x "$root/usr/bin/$d" ] || fail "$d: no /usr/bin/$d"
    grep -q "^$d:" "$root/etc/passwd" || fail "$d: postinst made no user"
    [ "$(stat -c '%a %U' "$root/etc/$d")" = "750 root" ] || fail "$d: /etc/$d is not root's, 0750"
    [ -f "$root/usr/lib/sysusers.d/$d.conf" ] || fail "$d: no sysusers.d entry"
  done
  # Nothing enabled: no symlink into a .wants directory, no unit in /etc/systemd/system.
  if [ -d "$root/etc/systemd" ] && find "$root/etc/systemd" -name 'entropy-*' | grep -q .; then
    find "$root/etc/systemd" -name 'entropy-*' >&2; fail "a unit was enabled by the install"
  fi
  echo "installed: $(ls "$root/lib/systemd/system" | tr '\n' ' ')(users: $(cut -d: -f1 "$root/etc/passwd" | grep entropy | tr '\n' ' '))"

  step "systemd-analyze verify of the installed units (the distribution's units beside them)"
  if command -v systemd-analyze >/dev/null; then
    mkdir -p "$root/usr/lib/systemd" "$root/usr/bin"
    cp -r /lib/systemd/system "$root/usr/lib/systemd/"
    [ -e "$root/bin" ] || ln -s usr/bin "$root/bin"
    printf '#!/bin/sh\nexit 0\n' >"$root/usr/bin/kill" # the gateway's ExecReload=
    chmod 0755 "$root/usr/bin/kill"
    local units=() out
    mapfile -t units < <(cd "$root/lib/systemd/system" && ls entropy-*.service)
    for d in "${units[@]}"; do
      grep -q '^ExecStart=/usr/bin/entropy-' "$root/lib/systemd/system/$d" || fail "$d: ExecStart is not /usr/bin/..."
    done
    out="$(cd / && systemd-analyze verify --root="$root" "${units[@]/#//lib/systemd/system/}" 2>&1)" ||
      { echo "$out" >&2; fail "systemd-analyze verify"; }
    [ -z "$out" ] || { echo "$out" >&2; fail "systemd-analyze verify: warnings (above)"; }
    echo "ok: ${units[*]} verify without a warning, at /usr/bin"
    # And verify looks inside the scratch root: without the gateway's binary there, it fails.
    mv "$root/usr/bin/entropy-gateway" "$tmp/moved"
    if (cd / && systemd-analyze verify --root="$root" /lib/systemd/system/entropy-gateway.service >/dev/null 2>&1); then
      fail "systemd-analyze verify passed with /usr/bin/entropy-gateway missing from the root: it is not checking the install"
    fi
    mv "$tmp/moved" "$root/usr/bin/entropy-gateway"
    echo "ok: and with /usr/bin/entropy-gateway taken out of the root, verify fails"
    rm -rf "${root:?}/usr/lib/systemd/system" "${root:?}/bin" "${root:?}/usr/bin/kill"
  else
    skip "systemd-analyze is not installed and could not be"
  fi

  step "dpkg -r, then dpkg --purge: nothing of the packages left"
  "${dpkg[@]}" -r "${SERVICES[@]}" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg -r"; }
  for d in "${SERVICES[@]}"; do
    [ ! -e "$root/usr/bin/$d" ] || fail "$d: /usr/bin/$d left after dpkg -r"
  done
  "${dpkg[@]}" --purge "${SERVICES[@]}" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log" >&2; fail "dpkg --purge"; }
  local left
  left="$(cd "$root" && find . -path ./var/lib/dpkg -prune -o -path ./etc -prune -o -type f -print;
    find "$root/etc" -mindepth 1 -name 'entropy-*')"
  [ -z "$left" ] || { echo "$left" >&2; fail "files left after purge (above)"; }
  for d in "${SERVICES[@]}"; do
    "${dpkg[@]}" -s "$d" >/dev/null 2>&1 && fail "$d still known to dpkg after purge"
  done
  echo "removed and purged: no file left; the users stay (as Debian keeps system users)"
}

if [ -n "$QUICK" ]; then
  step "quick: .debs from $TARGET_DIR/release (gzip -1), installed into a scratch root, units verified, removed"
  for d in "${SERVICES[@]}"; do
    [ -x "$TARGET_DIR/release/$d" ] || fail "no $TARGET_DIR/release/$d: build_release first (cargo build --release ...)"
  done
  DEB_COMPRESS=gzip DEB_LEVEL=1 scripts/release/deb.sh "$TARGET_DIR/release" "$tmp/debs" amd64 "$VERSION"
  install_check "$tmp/debs" amd64
  step "preflight --quick: ok"
  exit 0
fi

step "versions: every package says $VERSION (scripts/release/versions.sh)"
scripts/release/versions.sh "$VERSION"

rm -rf "$DIST"
mkdir -p "$DIST"

step "actionlint $ACTIONLINT_VERSION: .github/workflows/"
apt_install shellcheck
gopath="$(go env GOPATH)"
export PATH="$gopath/bin:$PATH"
if ! actionlint -version 2>/dev/null | grep -qx "${ACTIONLINT_VERSION}"; then
  go install "github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}"
fi
actionlint -no-color && echo "actionlint: no finding"

step "client packages: scripts/package_check.sh (each builds and installs as its README says)"
for d in clients/typescript clients/web; do # as clients/test.sh prepares them
  [ -d "$d/node_modules" ] || (cd "$d" && npm ci --no-audit --no-fund --silent)
done
scripts/package_check.sh

step "Maven Central's jars: mvn -P release package (sources, javadoc; signing skipped, nothing uploaded)"
(cd clients/java && mvn -B -q -ntp -P release -Dgpg.skip -DskipTests package)
for j in "" -sources -javadoc; do
  f="clients/java/target/entropy-client-$VERSION$j.jar"
  [ -s "$f" ] || fail "no $f"
  echo "$f ($(stat -c %s "$f") bytes)"
done

step "SBOM: cargo cyclonedx, one CycloneDX JSON per shipped crate"
if ! cargo cyclonedx --version 2>/dev/null | grep -q " $CYCLONEDX_VERSION$"; then
  cargo install --locked "cargo-cyclonedx@$CYCLONEDX_VERSION"
fi
cargo cyclonedx --version
scripts/release/sbom.sh "${TARGETS%% *}" "$DIST" "$VERSION"
for f in "$DIST"/*.cdx.json; do
  python3 - "$f" <<'PY'
import json, sys
bom = json.load(open(sys.argv[1]))
assert bom["bomFormat"] == "CycloneDX", bom.get("bomFormat")
names = {c["name"] for c in bom.get("components", [])}
for want in ("tokio", "rustls"):
    assert want in names, f"{sys.argv[1]}: no {want} among {len(names)} components"
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: CycloneDX {bom['specVersion']}, {len(names)} components")
PY
done

# Per target: the static build, its .debs and, for amd64, their install check; then the next.
built_targets=()
for target in $TARGETS; do
  step "static build: $target (profile ${PROFILE:-dist})"
  arch="${target%%-*}"
  if [ "$arch" = "$(uname -m)" ]; then
    apt_install musl-tools
  else
    # The cross C compiler and linker; QEMU user-mode to run what it builds (optional).
    apt_install "gcc-${arch}-linux-gnu" "binutils-${arch}-linux-gnu" || true
    apt_install qemu-user-static || true
  fi
  rc=0
  scripts/release/static.sh "$target" "$DIST" "$VERSION" || rc=$?
  case "$rc" in
    0) built_targets+=("$target") ;;
    3) skip "$target: no cross toolchain here (above)"; continue ;;
    *) fail "static build of $target" ;;
  esac

  deb_arch=amd64
  [ "$arch" = aarch64 ] && deb_arch=arm64
  step ".deb packages: $deb_arch"
  scripts/release/deb.sh "$DIST/bin-$target" "$DIST" "$deb_arch" "$VERSION"
  dpkg-deb --info "$DIST/entropy-gateway_${VERSION}_${deb_arch}.deb" | grep -q "Architecture: $deb_arch" ||
    fail "entropy-gateway_${VERSION}_${deb_arch}.deb is not $deb_arch"
  if [ "$deb_arch" = amd64 ] && [ "$(uname -m)" = x86_64 ]; then
    install_check "$DIST" amd64
  fi
done
[ ${#built_targets[@]} -gt 0 ] || fail "no static build"

step "container images: buildah (vfs storage, chroot isolation), deploy/Dockerfile.release"
if ! command -v buildah >/dev/null; then apt_install buildah || true; fi
if command -v buildah >/dev/null; then
  bins=()
  for t in x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
    [ -d "$DIST/bin-$t" ] && bins+=("$DIST/bin-$t") || bins+=("")
  done
  scripts/release/image_context.sh "$tmp/image-context" ${bins[0]:+"${bins[0]}"} ${bins[1]:+"${bins[1]}"}
  platforms=()
  [ -n "${bins[0]}" ] && platforms+=(linux/amd64)
  [ -n "${bins[1]}" ] && platforms+=(linux/arm64)
  buildah=(buildah --root "$tmp/containers/storage" --runroot "$tmp/containers/run" --storage-driver vfs)
  for image in gateway collector feeder; do
    for platform in "${platforms[@]}"; do
      arch="${platform#linux/}"
      ref="localhost/entropy-diode/$image:$VERSION-$arch"
      "${buildah[@]}" build --quiet --isolation chroot --platform "$platform" --target "$image" \
        -f deploy/Dockerfile.release -t "$ref" "$tmp/image-context" >/dev/null
      got="$("${buildah[@]}" inspect --format '{{.OCIv1.Architecture}} {{.OCIv1.Config.User}} {{index .OCIv1.Config.Entrypoint 0}}' "$ref")"
      "${buildah[@]}" push --quiet "$ref" "oci-archive:$DIST/image-$image-$VERSION-linux-$arch.tar" >/dev/null
      line="$image $platform: $got, $(stat -c %s "$DIST/image-$image-$VERSION-linux-$arch.tar") bytes"
      if [ "$arch" = amd64 ] && [ "$(uname -m)" = x86_64 ]; then
        # The image's own root filesystem runs its program: static, nothing else needed.
        c="$("${buildah[@]}" from --quiet "$ref")"
        m="$("${buildah[@]}" mount "$c")"
        program="$(cut -d' ' -f3 <<<"$got")"
        chroot "$m" "$program" --help >/dev/null || fail "$image: $program does not run from its image"
        [ "$image" != gateway ] || [ "$(stat -c %u "$m/var/lib/entropy-gateway")" = 10001 ] ||
          fail "gateway image: /var/lib/entropy-gateway not owned by 10001"
        "${buildah[@]}" umount "$c" >/dev/null
        "${buildah[@]}" rm "$c" >/dev/null
        line="$line; $program --help runs from the image"
      fi
      echo "$line"
    done
  done
  echo "(the workflow pushes the same targets as multi-arch images; here each is an OCI archive in $DIST)"
else
  skip "buildah could not be installed: no daemonless image build"
fi

step "SHA256SUMS"
(cd "$DIST" && rm -f SHA256SUMS &&
  find . -maxdepth 1 -type f \( -name '*.tar.gz' -o -name '*.deb' -o -name '*.cdx.json' \) -printf '%f\n' |
  sort | xargs sha256sum >SHA256SUMS && sha256sum --quiet -c SHA256SUMS)
cat "$DIST/SHA256SUMS"

step "preflight: ok, artifacts in $DIST (built: ${built_targets[*]})"
