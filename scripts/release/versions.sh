#!/usr/bin/env bash
# Every version a release stamps, against the tag being released:
#
#   scripts/release/versions.sh 0.2.0       (the tag v0.2.0 without its v)
#
# The workspace's Cargo.toml (the binaries, the .debs, the tarballs and the crates), the Python
# package (clients/python/pyproject.toml), both npm packages (clients/typescript, clients/web)
# and the Maven artifact (clients/java/pom.xml) must all say it; the Go module's version is its
# tag (clients/go/vX.Y.Z), which the release workflow pushes. Exits 1 naming each that differs.
set -euo pipefail
cd "$(dirname "$0")/../.."
want="${1:?usage: versions.sh X.Y.Z}"
bad=0
check() { # check FILE VERSION
  if [ "$2" = "$want" ]; then echo "$1: $2"; else echo "$1: $2, not $want" >&2; bad=1; fi
}
check Cargo.toml "$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
check clients/python/pyproject.toml "$(sed -n '/^\[project\]/,/^\[/s/^version = "\(.*\)"/\1/p' clients/python/pyproject.toml)"
for p in clients/typescript clients/web; do
  check "$p/package.json" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$p/package.json")"
done
check clients/java/pom.xml "$(python3 - <<'PY'
import xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
print(ET.parse("clients/java/pom.xml").getroot().find("m:version", ns).text)
PY
)"
exit "$bad"
