# Sourced by the bench scripts: `apt_install PACKAGE...` installs the Debian packages that are
# not installed yet (apt-get, with sudo when not root), refreshing the package lists only when
# the first try fails.
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
