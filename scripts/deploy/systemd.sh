#!/usr/bin/env bash
# Checks the systemd units and example configs of the feeder, the gateway and the collector
# (deploy/systemd/) without booting systemd (part of scripts/deploy/configs.sh, so of
# scripts/test.sh):
#   1. scripts/deploy/systemd_policy.py (the feeder: the hardening lines are there,
#      CAP_SYS_ADMIN is the only capability, the key is a credential, the boot unit fails open
#      after network-online.target, the config's keys are the feeder's) and
#      scripts/deploy/systemd_services_policy.py (the gateway and the collector: no capability
#      at all, every secret a credential, the configs' keys their programs'); then each one's
#      --self-test, faults planted one at a time in a copy, each named.
#   2. `systemd-analyze verify` on every unit (a warning fails too), in a scratch root holding
#      the distribution's units (the targets they order against) and the executables (the
#      built binaries, or empty stand-ins: verify only needs the paths to be executable).
#   3. `systemd-analyze security --offline=true`: the exposure score of each unit, which must
#      stay at or under 2.0 for the feeder's (1.6 when written, with systemd 252: it holds
#      CAP_SYS_ADMIN) and 1.5 for the gateway's and the collector's (1.1 when written).
#   4. `systemd-sysusers --dry-run` on each sysusers.d entry, in a scratch root.
#   5. `--print-config` of each shipped config by its program, when built (beside
#      ENTROPY_GATEWAY_BIN, as configs.sh finds the others), with the variables its unit sets
#      (Environment=, the credentials directory %d standing for a scratch one).
# What cannot run here prints SKIP: and the reason. Installs the `systemd` package (for
# systemd-analyze) when missing; it does not start anything.
set -euo pipefail
cd "$(dirname "$0")/../.."

step() { printf '\n==> %s\n' "$*"; }

units=(entropy-feeder.service entropy-feeder-boot.service entropy-gateway.service entropy-collector.service)
# The exposure each unit may reach (systemd-analyze security, 0 best, 10 worst).
declare -A max_exposure=(
  [entropy-feeder.service]=2.0 [entropy-feeder-boot.service]=2.0
  [entropy-gateway.service]=1.5 [entropy-collector.service]=1.5
)
programs=(entropy-feeder entropy-gateway entropy-collector)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

step "feeder units and config: policy, and its self-test"
python3 scripts/deploy/systemd_policy.py
python3 scripts/deploy/systemd_policy.py --self-test

step "gateway and collector units and configs: policy, and its self-test"
python3 scripts/deploy/systemd_services_policy.py
python3 scripts/deploy/systemd_services_policy.py --self-test

if ! command -v systemd-analyze >/dev/null; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  if command -v apt-get >/dev/null; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends systemd >/dev/null || true
  fi
fi

bin_dir="$(dirname "${ENTROPY_GATEWAY_BIN:-target/release/entropy-gateway}")"
step "systemd-analyze verify (scratch root with the distribution's units)"
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed and could not be (verify and security scores not run)"
else
  systemd-analyze --version | sed -n 1p
  root="$tmp/root"
  mkdir -p "$root/etc/systemd/system" "$root/usr/local/bin" "$root/usr/lib/systemd" "$root/usr/bin"
  # The targets and units the feeder's order against (network-online.target, ...).
  for d in /usr/lib/systemd/system /lib/systemd/system; do
    [ -d "$d" ] && { cp -r "$d" "$root/usr/lib/systemd/"; break; }
  done
  cp "${units[@]/#/deploy/systemd/}" "$root/etc/systemd/system/"
  for program in "${programs[@]}"; do
    if [ -x "$bin_dir/$program" ]; then
      cp -l "$bin_dir/$program" "$root/usr/local/bin/" 2>/dev/null || cp "$bin_dir/$program" "$root/usr/local/bin/"
    else
      printf '#!/bin/sh\nexit 0\n' >"$root/usr/local/bin/$program"
      chmod 0755 "$root/usr/local/bin/$program"
    fi
  done
  # The gateway's ExecReload= (merged /usr: /bin is /usr/bin).
  ln -s usr/bin "$root/bin"
  printf '#!/bin/sh\nexit 0\n' >"$root/usr/bin/kill"
  chmod 0755 "$root/usr/bin/kill"
  # verify exits 0 on an unknown or misspelt key (a warning, the line ignored): any output fails.
  out="$(systemd-analyze verify --root="$root" "${units[@]}" 2>&1)" || { echo "$out" >&2; exit 1; }
  [ -z "$out" ] || { echo "$out" >&2; echo "systemd-analyze verify: warnings (above)" >&2; exit 1; }
  echo "ok: ${units[*]} verify without a warning"

  step "systemd-analyze security --offline: exposure at most 2.0 (feeder), 1.5 (gateway, collector)"
  if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
    for u in "${units[@]}"; do
      max="${max_exposure[$u]}"
      score="$(systemd-analyze security --offline=true --root="$root" --no-pager "$u" 2>&1 |
        sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')"
      [ -n "$score" ] || { echo "systemd-analyze security printed no score for $u" >&2; exit 1; }
      echo "$u: exposure $score"
      python3 -c "import sys; sys.exit(float('$score') > $max)" ||
        { echo "$u: exposure $score above $max: a hardening line was lost" >&2; exit 1; }
    done
  else
    echo "SKIP: this systemd-analyze has no --offline (systemd < 250): no exposure score without a running systemd"
  fi
fi

step "systemd-sysusers --dry-run: each deploy/systemd/*.sysusers parses and makes its user"
if command -v systemd-sysusers >/dev/null; then
  for program in "${programs[@]}"; do
    # Installed where the README puts it, in an empty root: only this entry is read.
    sysroot="$tmp/sysroot-$program"
    install -D -m 0644 "deploy/systemd/$program.sysusers" "$sysroot/usr/lib/sysusers.d/$program.conf"
    mkdir -p "$sysroot/etc"
    out="$(systemd-sysusers --dry-run --root="$sysroot" 2>&1)" ||
      { echo "$out" >&2; exit 1; }
    # It exits 0 on a line it cannot parse (and ignores it): the user must be made, and nothing said.
    if ! grep -q "Creating user '$program'" <<<"$out" || grep -qiE 'unknown|invalid|fail' <<<"$out"; then
      echo "$out" >&2; echo "systemd-sysusers: no clean $program user from the entry" >&2; exit 1
    fi
    echo "ok: $(grep "Creating user '$program'" <<<"$out")"
  done
else
  echo "SKIP: systemd-sysusers is not installed"
fi

# unit_env UNIT CREDS: the unit's Environment= assignments, one a line, %d as CREDS.
unit_env() {
  sed -n 's/^Environment=//p' "deploy/systemd/$1" | tr ' ' '\n' | sed "s|%d|$2|g" | grep -v '^$' || true
}

step "each program accepts its shipped config with its unit's variables (--print-config)"
for pair in entropy-feeder:feeder.toml:entropy-feeder.service entropy-gateway:gateway.toml:entropy-gateway.service \
  entropy-collector:collector.toml:entropy-collector.service; do
  IFS=: read -r program config unit <<<"$pair"
  if [ -x "$bin_dir/$program" ]; then
    mapfile -t vars < <(unit_env "$unit" "$tmp/credentials")
    env -i PATH="$PATH" "${vars[@]}" "$bin_dir/$program" --config "deploy/systemd/$config" --print-config >/dev/null
    echo "deploy/systemd/$config: valid for $program (with ${vars[*]:-no variables})"
  else
    echo "SKIP: no $bin_dir/$program (cargo build --release -p $program); keys checked against the lists in the policy scripts only"
  fi
done
