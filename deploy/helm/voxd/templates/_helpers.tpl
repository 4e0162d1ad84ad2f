{{/*
Names and labels. Only the template subset that test/deploy/helm.test.ts renders is used in this
chart (see the list at the top of that file): keep to it, or extend the test's renderer with it.
*/}}
{{- define "voxd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "voxd.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "voxd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "voxd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "voxd.labels" -}}
{{ include "voxd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "voxd.secretName" -}}
{{- if .Values.apiKeys.existingSecret }}
{{- .Values.apiKeys.existingSecret }}
{{- else }}
{{- include "voxd.fullname" . }}-api-keys
{{- end }}
{{- end }}

{{/*
The pod's grace period: voxd's own drain (shutdown_timeout_ms, rounded up to seconds) after the
preStop sleep, plus a margin for its last 2 s and the unloads, so the kubelet's SIGKILL never cuts
a drain voxd would have finished.
*/}}
{{- define "voxd.terminationGracePeriodSeconds" -}}
{{- if .Values.terminationGracePeriodSeconds }}
{{- .Values.terminationGracePeriodSeconds }}
{{- else }}
{{- add (div (add .Values.config.shutdown_timeout_ms 999) 1000) .Values.preStopSleepSeconds .Values.terminationGraceMarginSeconds }}
{{- end }}
{{- end }}

{{/*
The Ingress' proxy read and send timeouts, in seconds: realtime_idle_timeout_ms rounded up, plus a
margin, so that a proxy never ends a realtime session before voxd's own idle limit would (voxd
ends it with a session_idle_timeout event and close 1000; a proxy's timeout is a bare cut).
ingress.proxyTimeoutSeconds, when set, wins.
*/}}
{{- define "voxd.proxyTimeoutSeconds" -}}
{{- if .Values.ingress.proxyTimeoutSeconds }}
{{- .Values.ingress.proxyTimeoutSeconds }}
{{- else }}
{{- add (div (add .Values.config.realtime_idle_timeout_ms 999) 1000) .Values.ingress.proxyTimeoutMarginSeconds }}
{{- end }}
{{- end }}

{{- define "voxd.pvcName" -}}
{{- if .Values.persistence.existingClaim }}
{{- .Values.persistence.existingClaim }}
{{- else }}
{{- include "voxd.fullname" . }}-data
{{- end }}
{{- end }}
