{{/* Names, labels, TOML rendering and the computed values (memory, grace periods). */}}

{{- define "ed.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-entropy-diode, or the release name when it already holds the chart name.
     Kept short: pod names <fullname>-gateway-<i> are gateway ids (at most 64 characters). */}}
{{- define "ed.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ed.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "ed.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: call with (list $ "gateway"). */}}
{{- define "ed.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "ed.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "ed.gatewayName" -}}{{ include "ed.fullname" . }}-gateway{{- end -}}
{{- define "ed.ingestService" -}}{{ include "ed.fullname" . }}-gateway-ingest{{- end -}}
{{- define "ed.collectorName" -}}{{ include "ed.fullname" . }}-collector{{- end -}}
{{- define "ed.simulatorName" -}}{{ include "ed.fullname" . }}-simulator{{- end -}}

{{- define "ed.imageTag" -}}{{ default .Chart.AppVersion .Values.image.tag }}{{- end -}}

{{/* One TOML value: strings quoted (JSON escapes are valid TOML basic-string escapes),
     whole numbers as integers (values arrive as float64), lists as arrays. */}}
{{- define "ed.tomlValue" -}}
{{- if kindIs "string" . -}}
{{- toJson . -}}
{{- else if kindIs "bool" . -}}
{{- ternary "true" "false" . -}}
{{- else if or (kindIs "float64" .) (kindIs "int" .) (kindIs "int64" .) -}}
{{- if eq (float64 (int64 .)) (float64 .) -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- else if kindIs "slice" . -}}
[{{- range $i, $v := . -}}{{ if $i }}, {{ end }}{{ include "ed.tomlValue" $v }}{{- end -}}]
{{- else -}}
{{- fail (printf "cannot write %v as a TOML value" .) -}}
{{- end -}}
{{- end -}}

{{/* key = value lines of a map, sorted; call with (list $map $reservedKeys $where). */}}
{{- define "ed.tomlKeys" -}}
{{- $m := index . 0 -}}
{{- $reserved := index . 1 -}}
{{- range $k := keys $m | sortAlpha }}
{{- if has $k $reserved }}
{{- fail (printf "%s.%s is set by the chart; remove it from values" (index $ 2) $k) }}
{{- end }}
{{ $k }} = {{ include "ed.tomlValue" (get $m $k) }}
{{- end }}
{{- end -}}

{{/* ceil(ms / 1000) */}}
{{- define "ed.ceilSeconds" -}}{{ div (add (int64 .) 999) 1000 }}{{- end -}}

{{/* terminationGracePeriodSeconds of a gateway: preStop sleep, then drain, then grace. */}}
{{- define "ed.gatewayTerminationSeconds" -}}
{{- $c := .Values.gateway.config -}}
{{- $drain := required "gateway.config.shutdown_drain_ms is required" $c.shutdown_drain_ms -}}
{{- $grace := required "gateway.config.shutdown_grace_ms is required" $c.shutdown_grace_ms -}}
{{- add (int64 .Values.gateway.preStopSleepSeconds) (include "ed.ceilSeconds" (add (int64 $drain) (int64 $grace))) (int64 .Values.gateway.terminationMarginSeconds) -}}
{{- end -}}

{{/* The gateway's memory request and limit, in Mi (see values.yaml). */}}
{{- define "ed.gatewayMemory" -}}
{{- $c := .Values.gateway.config -}}
{{- $pool := required "gateway.config.pool_capacity_bytes is required" $c.pool_capacity_bytes -}}
{{- $buffered := required "gateway.config.max_buffered_bytes is required" $c.max_buffered_bytes -}}
{{- $mib := 1048576 -}}
{{- $bytes := add (int64 $pool) (int64 $buffered) (mul (int64 .Values.gateway.resources.memoryOverheadMiB) $mib) -}}
{{- div (add $bytes (sub $mib 1)) $mib }}Mi
{{- end -}}

{{/* How many gateways collectors are given: every one the HPA may create. */}}
{{- define "ed.gatewayCount" -}}
{{- if .Values.gateway.autoscaling.enabled -}}
{{- max (int64 .Values.gateway.autoscaling.maxReplicas) (int64 .Values.gateway.replicas) -}}
{{- else -}}
{{- int64 .Values.gateway.replicas -}}
{{- end -}}
{{- end -}}

{{/* Pod and container security context (restricted Pod Security Standard, uid 10001). */}}
{{- define "ed.podSecurity" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "ed.containerSecurity" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
allowPrivilegeEscalation: false
privileged: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "ed.feederName" -}}{{ include "ed.fullname" . }}-feeder{{- end -}}

{{/* The feeder's gateway: feeder.gatewayEndpoint, or the chart's public gateway Service by
     the name its certificate carries in the install example (<svc>.<namespace>.svc: the pod's
     DNS search list completes it). */}}
{{- define "ed.feederEndpoint" -}}
{{- if .Values.feeder.gatewayEndpoint -}}
{{- .Values.feeder.gatewayEndpoint -}}
{{- else -}}
https://{{ include "ed.gatewayName" . }}.{{ .Release.Namespace }}.svc:{{ .Values.gateway.service.port }}
{{- end -}}
{{- end -}}
