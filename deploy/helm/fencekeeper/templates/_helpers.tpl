{{- define "fencekeeper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fencekeeper.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "fencekeeper.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "fencekeeper.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "fencekeeper.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fencekeeper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "fencekeeper.labels" -}}
{{ include "fencekeeper.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "fencekeeper.etcdSecret" -}}
{{- default (printf "%s-etcd" (include "fencekeeper.fullname" .)) .Values.etcd.existingSecret -}}
{{- end -}}

{{- define "fencekeeper.policyConfigMap" -}}
{{- default (printf "%s-policy" (include "fencekeeper.fullname" .)) .Values.server.policy.configMapName -}}
{{- end -}}

{{/* preStop + the drain's grace + one etcd call + margin, in whole seconds. */}}
{{- define "fencekeeper.terminationGracePeriodSeconds" -}}
{{- $d := .Values.drain -}}
{{- add (int $d.preStopSleepSeconds) (div (add (int $d.shutdownGraceMs) 999) 1000) (div (add (int .Values.etcd.timeoutMs) 999) 1000) (int $d.marginSeconds) -}}
{{- end -}}

{{/* Settings the server would refuse at start, refused here at render time with the same reason. */}}
{{- define "fencekeeper.validate" -}}
{{- $s := .Values.server -}}
{{- if and $s.tls.clientCA.enabled (not $s.tls.enabled) -}}
{{- fail "server.tls.clientCA.enabled (mutual TLS) needs server.tls.enabled" -}}
{{- end -}}
{{- if and $s.tls.enabled (not $s.tls.secretName) -}}
{{- fail "server.tls.enabled needs server.tls.secretName (a Secret with tls.crt and tls.key)" -}}
{{- end -}}
{{- if and $s.tls.clientCA.enabled (not $s.tls.clientCA.secretName) -}}
{{- fail "server.tls.clientCA.enabled needs server.tls.clientCA.secretName (a Secret with the CA at server.tls.clientCA.key)" -}}
{{- end -}}
{{- if and $s.tls.enabled (not .Values.metrics.enabled) -}}
{{- fail "server.tls.enabled needs metrics.enabled: Kubernetes' gRPC probe speaks cleartext only, so the probes ask the metrics port's /readyz and /livez" -}}
{{- end -}}
{{- if $s.jwt.enabled -}}
{{- if or (not $s.jwt.issuer) (not $s.jwt.audience) -}}
{{- fail "server.jwt.enabled needs server.jwt.issuer and server.jwt.audience" -}}
{{- end -}}
{{- if not (or $s.jwt.keys.secretName $s.jwt.keys.configMapName) -}}
{{- fail "server.jwt.enabled needs server.jwt.keys.secretName or server.jwt.keys.configMapName" -}}
{{- end -}}
{{- if and $s.jwt.keys.secretName $s.jwt.keys.configMapName -}}
{{- fail "server.jwt.keys: give secretName or configMapName, not both" -}}
{{- end -}}
{{- if not $s.jwt.keys.files -}}
{{- fail "server.jwt.keys.files: name at least one key file of the Secret or ConfigMap" -}}
{{- end -}}
{{- end -}}
{{- $authenticated := or $s.tls.clientCA.enabled $s.jwt.enabled -}}
{{- if and $s.policy.enabled (not $authenticated) -}}
{{- fail "server.policy.enabled needs authentication: server.tls.clientCA.enabled or server.jwt.enabled" -}}
{{- end -}}
{{- if and $s.policy.enabled (not $s.policy.configMapName) (not $s.policy.inline) -}}
{{- fail "server.policy.enabled needs server.policy.configMapName or server.policy.inline" -}}
{{- end -}}
{{- if and (not $authenticated) (not $s.allowUnauthenticated) -}}
{{- fail "no authentication: set server.tls.clientCA.enabled or server.jwt.enabled, or server.allowUnauthenticated behind a mesh that authenticates callers (deploy/MESH.md)" -}}
{{- end -}}
{{- if and .Values.etcd.tls.enabled (not .Values.etcd.tls.secretName) -}}
{{- fail "etcd.tls.enabled needs etcd.tls.secretName (a Secret with ca.crt, and tls.crt and tls.key for a client certificate)" -}}
{{- end -}}
{{- if and (not .Values.etcd.existingSecret) (not .Values.etcd.endpoints) -}}
{{- fail "etcd.endpoints: name the etcd cluster's client endpoints (or etcd.existingSecret)" -}}
{{- end -}}
{{- end -}}
