#!/usr/bin/env bash
# Proves that `go get github.com/entropy-diode/entropy-diode/clients/go@vX.Y.Z` resolves and
# builds once the repository is public and tagged `clients/go/vX.Y.Z` (Go's rule for a module
# in a subdirectory: the tag is the subdirectory, a slash, then the version), using the working
# tree as it is now. Nothing is published and nothing is left in the repository:
#
#   0. module hygiene here: `go mod tidy -diff` (go.mod and go.sum exact; it may download the
#      test-only modules of grpc into your module cache, as tidy does) and `go vet ./...`
#   1. a scratch git repository holds this folder's files (tracked and new, not ignored) at
#      clients/go/, tagged clients/go/$VERSION; git is pointed at it in place of
#      https://github.com/entropy-diode/entropy-diode (url.insteadOf, scratch git config only)
#   2. a scratch module outside the repository runs `go get MODULE@VERSION` straight from that
#      git repository (GOPRIVATE: no proxy, no checksum database for this module; the other
#      modules come from the local module cache, or the usual proxy if it lacks one) and builds
#      and runs a program importing the entropy package
#   3. a second scratch module does the same through GOPROXY=file://..., a proxy directory
#      (list, .info, .mod, .zip) made by step 2's download: what proxy.golang.org would serve
#
#   clients/go/package_check.sh [VERSION]        VERSION defaults to v0.1.0
#
# Every download goes to a scratch GOMODCACHE, so the made-up version never enters your cache.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
MODULE=github.com/entropy-diode/entropy-diode/clients/go
REPO_URL=https://github.com/entropy-diode/entropy-diode
VERSION="${1:-v0.1.0}"
TAG="clients/go/$VERSION"

scratch="$(mktemp -d)"
cleanup() {
  chmod -R u+w "$scratch" 2>/dev/null || true # the module cache is read-only
  rm -rf "$scratch"
}
trap cleanup EXIT

step() { printf '==> %s\n' "$*"; }

step "0. go mod tidy -diff, go vet (in $HERE)"
(cd "$HERE" && go mod tidy -diff && go vet ./...)

step "1. scratch repository at $REPO_URL, tag $TAG, from the working tree"
repo="$scratch/entropy-diode.git"
work="$scratch/checkout"
mkdir -p "$work/clients/go"
(cd "$HERE" && git ls-files -z --cached --others --exclude-standard . |
  while IFS= read -r -d '' f; do
    if [ -f "$f" ]; then # a tracked file deleted in the working tree is not released
      mkdir -p "$work/clients/go/$(dirname "$f")"
      cp -p "$f" "$work/clients/go/$f"
    fi
  done)
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$scratch/gitconfig" GIT_TERMINAL_PROMPT=0
git config --global user.name "module check"
git config --global user.email "module-check@invalid"
git config --global init.defaultBranch main
git config --global protocol.file.allow always
git config --global url."file://$repo".insteadOf "$REPO_URL"
git -C "$work" init -q
git -C "$work" add -A
git -C "$work" commit -q -m "clients/go as in the working tree"
git -C "$work" tag "$TAG"
git clone -q --bare "$work" "$repo"
echo "$(git -C "$repo" ls-tree -r --name-only "$TAG" | wc -l) files at $TAG"

real_cache="$(go env GOMODCACHE)"
upstream_proxy="$(go env GOPROXY)"
export GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod GOMODCACHE="$scratch/modcache"
export GONOSUMDB="$MODULE" # not public yet: the checksum database has never seen it

# app DIR: a module that imports the entropy package and prints a parsed endpoint.
app() {
  mkdir -p "$1"
  cat >"$1/go.mod" <<EOF
module example.com/modulecheck

go 1.26.0
EOF
  cat >"$1/main.go" <<'EOF'
package main

import (
	"fmt"
	"log"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func main() {
	ep, err := entropy.ParseEndpoint("gw.example.com", false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ep)
}
EOF
  # The hashes this repository already trusts, so the other modules need no checksum lookup.
  cp "$HERE/go.sum" "$1/go.sum"
}

check_app() {
  local dir="$1"
  (cd "$dir" &&
    go get "$MODULE@$VERSION" &&
    go build -o modulecheck . &&
    got="$(./modulecheck)" &&
    [ "$got" = "https://gw.example.com:50051" ] &&
    [ "$(go list -m -f '{{.Version}}' "$MODULE")" = "$VERSION" ] &&
    echo "built and ran it: $got; go.mod requires $MODULE $VERSION")
}

step "2. go get $MODULE@$VERSION from git (tag $TAG), outside the repository"
app "$scratch/app-git"
GOPRIVATE="$MODULE" GOPROXY="file://$real_cache/cache/download,$upstream_proxy" \
  check_app "$scratch/app-git"

step "3. go get $MODULE@$VERSION through GOPROXY=file:// (list, .info, .mod, .zip)"
proxy="$scratch/proxy"
mkdir -p "$proxy"
cp -R "$GOMODCACHE/cache/download/." "$proxy/"
at="$proxy/$MODULE/@v"
for f in list "$VERSION.info" "$VERSION.mod" "$VERSION.zip"; do
  [ -s "$at/$f" ] || { echo "proxy layout lacks $at/$f" >&2; exit 1; }
done
chmod -R u+w "$GOMODCACHE"
rm -rf "$GOMODCACHE" # start empty: everything must come from the proxy directory
app "$scratch/app-proxy"
GOPROXY="file://$proxy,file://$real_cache/cache/download,$upstream_proxy" \
  check_app "$scratch/app-proxy"

step "ok: $MODULE@$VERSION resolves from tag $TAG and from a module proxy"
