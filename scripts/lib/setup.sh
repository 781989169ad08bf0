# Sourced by scripts/test.sh and the bench scripts, for what they set up the same way:
#
#   apt_install PACKAGE...   installs the Debian packages that are not installed yet (apt-get,
#                            with sudo when not root), refreshing the package lists only when
#                            the first try fails
#   build_release [ARG...]   the test command's release build: its five packages in one cargo
#                            invocation, so every release build of the tree resolves one feature
#                            set (scripts/cargo/feature_sets.py checks the builds that follow it)
apt_install() {
  local missing=() package sudo=""
  for package in "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y "${missing[@]}" >/dev/null || {
    $sudo apt-get update >/dev/null && $sudo apt-get install -y "${missing[@]}" >/dev/null; }
}

build_release() {
  cargo build --release --locked "$@" \
    -p entropy-gateway -p entropy-collector -p entropy-bench -p entropy-mcp -p entropy-diode-cli \
    -p entropy-feeder
}
