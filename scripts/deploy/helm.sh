#!/usr/bin/env bash
# Checks the Helm chart deploy/helm/entropy-diode without a cluster (part of scripts/test.sh):
#
#   1. Builds deploy/k8s-check (Go). It holds Helm v3.22.0's own lint and render packages
#      (helm.sh/helm/v3/pkg/lint, pkg/engine, pkg/chart/loader: the code `helm lint` and
#      `helm template` run), so one Go build lints, renders and checks. From empty Go build
#      and module caches on a busy 2-core machine this build took 3m42s; building the helm
#      command (`go install helm.sh/helm/v3/cmd/helm@v3.22.0`) took 5m16s there, before any
#      decoding check, so the command is not installed.
#   2. For the default values, ci/feeder-values.yaml and ci/scaled-values.yaml (5 gateways with an HPA up to 8,
#      the simulator, no ServiceMonitor, ...): `helm lint --strict`, `helm template`, every
#      rendered object decoded strictly into its k8s.io/api type (prometheus-operator's for
#      ServiceMonitor): unknown, misspelt, wrongly-cased or duplicated fields and unknown kinds
#      fail. Then the rendered gateway and collector configs go through the binaries'
#      --print-config with the environment their pods get, and the policy the types cannot
#      express is checked: pod security and resources of every container, /readyz readiness,
#      terminationGracePeriodSeconds >= preStop + shutdown_drain_ms + shutdown_grace_ms (from
#      the effective config), memory >= the worst case of the config (--print-bounds), each gateway's state_dir on a PersistentVolumeClaim
#      of its own, per-gateway ingest names covering the HPA's maxReplicas, and the
#      NetworkPolicies of the diode. One summary line per values set.
#   3. Negative self-tests: k8s-check must fail on deploy/k8s-check/testdata/bad-*.yaml and
#      name every planted fault (a misspelt field, a duplicate key, a wrongly-cased field, an
#      unknown kind; a writable root filesystem, a writable volume that is not a
#      volumeClaimTemplate, a missing limit, egress to 0.0.0.0/0, no default deny).
#   4. The feeder (ci/feeder-values.yaml; off by default, and its DaemonSet must then not
#      render): the one workload with uid 0 and a capability, so held to exactly
#      [SYS_ADMIN] added, ALL dropped, its API key a mounted Secret file never in the
#      ConfigMap, no host /dev, a node directory only for the EGD socket, egress only to the
#      gateways' public port and DNS (deploy/k8s-check/feeder.go). Faults planted one at a
#      time in its rendered manifest must each be named. Its config goes through
#      `entropy-feeder --print-config` when that binary is beside the others; else it is
#      parsed and checked for the policy only (k8s-check's summary says which).
#
# When a helm v3.22 command is on PATH, its `helm lint --strict` and `helm template` output
# are compared with k8s-check's as well.
#
# Needs Go and the release binaries (ENTROPY_GATEWAY_BIN, default
# target/release/entropy-gateway, with entropy-collector beside it).
set -euo pipefail
cd "$(dirname "$0")/../.."

step() { printf '\n==> %s\n' "$*"; }

bin_dir="$(dirname "${ENTROPY_GATEWAY_BIN:-target/release/entropy-gateway}")"
bin_dir="$(cd "$bin_dir" && pwd)"
for b in entropy-gateway entropy-collector; do
  [ -x "$bin_dir/$b" ] || { echo "deploy/helm.sh: no $bin_dir/$b (cargo build --release)" >&2; exit 1; }
done

chart=deploy/helm/entropy-diode
release=entropy-diode
namespace=entropy
kube_version=1.34.0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

step "deploy/k8s-check: build (Helm's lint and render packages, k8s.io/api types)"
start=$SECONDS
(cd deploy/k8s-check && go vet . && go build -o "$tmp/k8s-check" .)
echo "built in $((SECONDS - start)) s"

step "chart: helm lint --strict, helm template, strict decoding, --print-config, policy"
sets=("" "$chart/ci/scaled-values.yaml" "$chart/ci/feeder-values.yaml")
for i in "${!sets[@]}"; do
  values_args=()
  [ -n "${sets[$i]}" ] && values_args=(-values "${sets[$i]}")
  "$tmp/k8s-check" -chart "$chart" "${values_args[@]}" -release "$release" \
    -namespace "$namespace" -kube-version "$kube_version" -bin "$bin_dir" \
    -out "$tmp/rendered-$i.yaml"
done

# The feeder is off by default and on in ci/feeder-values.yaml: make sure the DaemonSet was
# rendered, and so checked, where it should be.
grep -q '^kind: DaemonSet' "$tmp/rendered-0.yaml" && { echo "deploy/helm.sh: feeder rendered with default values" >&2; exit 1; }
grep -q '^kind: DaemonSet' "$tmp/rendered-2.yaml" || { echo "deploy/helm.sh: no feeder DaemonSet with ci/feeder-values.yaml" >&2; exit 1; }

if command -v helm >/dev/null && helm version --short 2>/dev/null | grep -q '^v3\.22'; then
  step "helm command on PATH: same lint verdict and the same rendered manifests"
  for i in "${!sets[@]}"; do
    helm_values=()
    [ -n "${sets[$i]}" ] && helm_values=(-f "${sets[$i]}")
    helm lint --strict --kube-version "$kube_version" "$chart" "${helm_values[@]}" >/dev/null
    helm template "$release" "$chart" -n "$namespace" --kube-version "$kube_version" \
      "${helm_values[@]}" > "$tmp/helm-$i.yaml"
    diff <(grep -v '^$' "$tmp/helm-$i.yaml") <(grep -v '^$' "$tmp/rendered-$i.yaml")
    echo "values set $i: helm $(helm version --short) renders the same"
  done
fi

step "negative self-tests: planted faults are found"
# expect_failure FIXTURE PATTERN...: k8s-check must exit 1 and report every pattern.
expect_failure() {
  local fixture="$1" out="$tmp/out.txt" rc=0
  shift
  "$tmp/k8s-check" -manifest "deploy/k8s-check/testdata/$fixture" -bin "$bin_dir" >"$out" 2>&1 || rc=$?
  if [ "$rc" != 1 ]; then
    cat "$out"
    echo "deploy/helm.sh: k8s-check exited $rc on $fixture, expected 1" >&2
    exit 1
  fi
  for pattern in "$@"; do
    if ! grep -qF -- "$pattern" "$out"; then
      cat "$out"
      echo "deploy/helm.sh: k8s-check did not report '$pattern' for $fixture" >&2
      exit 1
    fi
  done
  echo "$fixture: refused, naming all $# faults"
}
expect_failure bad-fields.yaml \
  'unknown field "spec.template.spec.containers[0].readinesProbe"' \
  'key "clusterIP" already set' \
  'unknown field "AutomountServiceAccountToken"' \
  'unknown kind networking.k8s.io/v1/Ingress'
# A gateway whose memory is below the worst case of its config: the chart's own values with
# less overhead.
printf 'gateway:\n  resources:\n    memoryOverheadMiB: 64\n' >"$tmp/small-memory.yaml"
if out="$("$tmp/k8s-check" -chart "$chart" -values "$tmp/small-memory.yaml" -release "$release" \
    -namespace "$namespace" -kube-version "$kube_version" -bin "$bin_dir" 2>&1)"; then
  echo "deploy/helm.sh: k8s-check passed a gateway with 64 MiB of overhead" >&2
  exit 1
fi
grep -qF 'below the worst case of its config' <<<"$out" || { echo "$out" >&2; exit 1; }
echo "small-memory values: refused ($(grep -oF 'below the worst case of its config' <<<"$out" | head -1))"
expect_failure bad-policy.yaml \
  'readOnlyRootFilesystem must be true' \
  'volume scratch mounted writable' \
  'no memory limit' \
  'no default-deny NetworkPolicy' \
  'peers ipBlock 0.0.0.0/0) allows more than'

step "negative self-tests: faults planted in the rendered feeder (ci/feeder-values.yaml) are found"
# feeder_mutant SED EXPECTED: the feeder manifest with SED applied must fail naming EXPECTED.
feeder_mutant() {
  local edit="$1" expected="$2" copy="$tmp/feeder-mutant.yaml" out="$tmp/out.txt" rc=0
  sed "$edit" "$tmp/rendered-2.yaml" >"$copy"
  cmp -s "$tmp/rendered-2.yaml" "$copy" && { echo "deploy/helm.sh: '$edit' changes nothing" >&2; exit 1; }
  "$tmp/k8s-check" -manifest "$copy" -bin "$bin_dir" >"$out" 2>&1 || rc=$?
  if [ "$rc" != 1 ] || ! grep -qF -- "$expected" "$out"; then
    cat "$out"
    echo "deploy/helm.sh: k8s-check (exit $rc) did not report '$expected' for '$edit'" >&2
    exit 1
  fi
  echo "caught: '$edit' -> $(grep -F -- "$expected" "$out" | head -1 | sed 's/^ *- //')"
}
feeder_mutant 's/add: \["SYS_ADMIN"\]/add: ["SYS_ADMIN", "NET_ADMIN"]/' 'capabilities.add must be exactly [SYS_ADMIN]'
feeder_mutant 's/add: \["SYS_ADMIN"\]/add: ["CAP_SYS_ADMIN"]/' 'capabilities.add must be exactly [SYS_ADMIN]'
feeder_mutant 's/drop: \["ALL"\]\(.*\)$/drop: ["NET_RAW"]\1/' 'capabilities must drop ALL'
feeder_mutant 's/runAsUser: 0$/runAsUser: 10001/' 'a non-root uid loses the added CAP_SYS_ADMIN'
feeder_mutant 's|^    api_key_file = .*|&\n    api_key = "s3cret"|' 'the API key belongs in a Secret'
feeder_mutant 's|^    api_key_file = .*|    api_key_file = "/etc/entropy-feeder/config/api-key"|' 'is not a file of a mounted Secret'
feeder_mutant '/name: entropy-diode-feeder$/,/^---/s/port: 50051/port: 443/' 'feeder egress rule (ports TCP/443'
feeder_mutant 's|kubernetes.io/metadata.name: entropy-feeder$|kubernetes.io/metadata.name: apps-2|' 'without the feeder pods of namespace entropy-feeder'
feeder_mutant 's|            path: /run/entropy-feeder$|            path: /dev|' 'only the feeder'"'"'s EGD directory may come from the node'
feeder_mutant 's|^      hostNetwork: false|      hostNetwork: true|' 'host namespaces are not allowed'
