#!/usr/bin/env bash
# Checks the feeder's systemd units and example config (deploy/systemd/) without booting
# systemd (part of scripts/deploy/configs.sh, so of scripts/test.sh):
#   1. scripts/deploy/systemd_policy.py: the hardening lines are there, CAP_SYS_ADMIN is the
#      only capability, the key is a credential, the boot unit fails open after
#      network-online.target, the config's keys are the feeder's; then --self-test, faults
#      planted one at a time in a copy, each named.
#   2. `systemd-analyze verify` on both units (a warning fails too), in a scratch root holding the distribution's
#      units (the targets they order against) and the executable (the built entropy-feeder, or
#      an empty stand-in: verify only needs the path to be executable).
#   3. `systemd-analyze security --offline=true`: the exposure score of each unit, which must
#      stay at or under 2.0 (1.6 when written, with systemd 252).
#   4. `systemd-sysusers --dry-run` on the sysusers.d entry, in a scratch root.
#   5. `entropy-feeder --config deploy/systemd/feeder.toml --print-config`, when the binary is
#      built (beside ENTROPY_GATEWAY_BIN, as configs.sh finds the others).
# What cannot run here prints SKIP: and the reason. Installs the `systemd` package (for
# systemd-analyze) when missing; it does not start anything.
set -euo pipefail
cd "$(dirname "$0")/../.."

step() { printf '\n==> %s\n' "$*"; }

units=(entropy-feeder.service entropy-feeder-boot.service)
max_exposure=2.0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

step "feeder units and config: policy, and its self-test"
python3 scripts/deploy/systemd_policy.py
python3 scripts/deploy/systemd_policy.py --self-test

if ! command -v systemd-analyze >/dev/null; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  if command -v apt-get >/dev/null; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends systemd >/dev/null || true
  fi
fi

feeder_bin="$(dirname "${ENTROPY_GATEWAY_BIN:-target/release/entropy-gateway}")/entropy-feeder"
step "systemd-analyze verify (scratch root with the distribution's units)"
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is not installed and could not be (verify and security scores not run)"
else
  systemd-analyze --version | sed -n 1p
  root="$tmp/root"
  mkdir -p "$root/etc/systemd/system" "$root/usr/local/bin" "$root/usr/lib/systemd"
  # The targets and units the feeder's order against (network-online.target, ...).
  for d in /usr/lib/systemd/system /lib/systemd/system; do
    [ -d "$d" ] && { cp -r "$d" "$root/usr/lib/systemd/"; break; }
  done
  cp "${units[@]/#/deploy/systemd/}" "$root/etc/systemd/system/"
  if [ -x "$feeder_bin" ]; then
    cp "$feeder_bin" "$root/usr/local/bin/entropy-feeder"
  else
    printf '#!/bin/sh\nexit 0\n' >"$root/usr/local/bin/entropy-feeder"
    chmod 0755 "$root/usr/local/bin/entropy-feeder"
  fi
  # verify exits 0 on an unknown or misspelt key (a warning, the line ignored): any output fails.
  out="$(systemd-analyze verify --root="$root" "${units[@]}" 2>&1)" || { echo "$out" >&2; exit 1; }
  [ -z "$out" ] || { echo "$out" >&2; echo "systemd-analyze verify: warnings (above)" >&2; exit 1; }
  echo "ok: ${units[*]} verify without a warning"

  step "systemd-analyze security --offline: exposure at most $max_exposure"
  if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
    for u in "${units[@]}"; do
      score="$(systemd-analyze security --offline=true --root="$root" --no-pager "$u" 2>&1 |
        sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')"
      [ -n "$score" ] || { echo "systemd-analyze security printed no score for $u" >&2; exit 1; }
      echo "$u: exposure $score"
      python3 -c "import sys; sys.exit(float('$score') > $max_exposure)" ||
        { echo "$u: exposure $score above $max_exposure: a hardening line was lost" >&2; exit 1; }
    done
  else
    echo "SKIP: this systemd-analyze has no --offline (systemd < 250): no exposure score without a running systemd"
  fi
fi

step "systemd-sysusers --dry-run: deploy/systemd/entropy-feeder.sysusers parses and makes the user"
if command -v systemd-sysusers >/dev/null; then
  # Installed where the README puts it, in an empty root: only this entry is read.
  install -D -m 0644 deploy/systemd/entropy-feeder.sysusers "$tmp/sysroot/usr/lib/sysusers.d/entropy-feeder.conf"
  mkdir -p "$tmp/sysroot/etc"
  out="$(systemd-sysusers --dry-run --root="$tmp/sysroot" 2>&1)" ||
    { echo "$out" >&2; exit 1; }
  # It exits 0 on a line it cannot parse (and ignores it): the user must be made, and nothing said.
  if ! grep -q "Creating user 'entropy-feeder'" <<<"$out" || grep -qiE 'unknown|invalid|fail' <<<"$out"; then
    echo "$out" >&2; echo "systemd-sysusers: no clean entropy-feeder user from the entry" >&2; exit 1
  fi
  echo "ok: $(grep "Creating user 'entropy-feeder'" <<<"$out")"
else
  echo "SKIP: systemd-sysusers is not installed"
fi

step "the feeder accepts deploy/systemd/feeder.toml (--print-config)"
if [ -x "$feeder_bin" ]; then
  env -i PATH="$PATH" "$feeder_bin" --config deploy/systemd/feeder.toml --print-config >/dev/null
  echo "deploy/systemd/feeder.toml: valid"
else
  echo "SKIP: no $feeder_bin (cargo build --release -p entropy-feeder); keys checked against the list in systemd_policy.py only"
fi
