{{/* The chart's name: nameOverride, else nodeplan. */}}
{{- define "nodeplan.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: fullnameOverride, else the release name when it already holds the chart's
name (`helm install nodeplan …` gives nodeplan), else <release>-<name>.
*/}}
{{- define "nodeplan.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "nodeplan.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels that select the controller's pods. */}}
{{- define "nodeplan.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodeplan.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels that select plan watch's pods (shadow mode). */}}
{{- define "nodeplan.shadowSelectorLabels" -}}
app.kubernetes.io/name: {{ include "nodeplan.name" . }}-shadow
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The shadow objects' labels. */}}
{{- define "nodeplan.shadowLabels" -}}
{{ include "nodeplan.shadowSelectorLabels" . }}
{{ include "nodeplan.commonLabels" . }}
{{- end }}

{{/* Helm's bookkeeping and additionalLabels. */}}
{{- define "nodeplan.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Every object's labels: the selector's, Helm's bookkeeping, and additionalLabels. */}}
{{- define "nodeplan.labels" -}}
{{ include "nodeplan.selectorLabels" . }}
{{ include "nodeplan.commonLabels" . }}
{{- end }}

{{/* metadata.annotations from additionalAnnotations and the extra map given as .extra. */}}
{{- define "nodeplan.annotations" -}}
{{- $all := merge (deepCopy (.extra | default dict)) (deepCopy (.root.Values.additionalAnnotations | default dict)) }}
{{- with $all }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The ServiceAccount: the controller's, or plan watch's with shadow.enabled. */}}
{{- define "nodeplan.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s%s" (include "nodeplan.fullname" .) (ternary "-shadow" "" .Values.shadow.enabled)) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* An image reference from {repository, tag, digest}; the tag defaults to appVersion. */}}
{{- define "nodeplan.image" -}}
{{- $tag := .image.tag | default .root.Chart.AppVersion }}
{{- if .image.digest }}
{{- printf "%s:%s@%s" .image.repository $tag .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository $tag }}
{{- end }}
{{- end }}

{{/*
affinity with the pod's selector labels filled in where a pod (anti-)affinity term names none,
so the default "one replica per node" needs no selector in values.yaml. Called with
dict "affinity" … "selector" ….
*/}}
{{- define "nodeplan.affinity" -}}
{{- $aff := deepCopy .affinity }}
{{- $sel := dict "matchLabels" (fromYaml .selector) }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with (get $aff $kind) }}
{{- range (get . "requiredDuringSchedulingIgnoredDuringExecution" | default list) }}
{{- if not .labelSelector }}{{ $_ := set . "labelSelector" (deepCopy $sel) }}{{ end }}
{{- end }}
{{- range (get . "preferredDuringSchedulingIgnoredDuringExecution" | default list) }}
{{- if and .podAffinityTerm (not .podAffinityTerm.labelSelector) }}{{ $_ := set .podAffinityTerm "labelSelector" (deepCopy $sel) }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $aff }}
{{- end }}

{{/* topologySpreadConstraints with the selector labels filled in where a constraint names none. */}}
{{- define "nodeplan.topologySpread" -}}
{{- $out := list }}
{{- range .constraints }}
{{- $c := deepCopy . }}
{{- if not $c.labelSelector }}{{ $_ := set $c "labelSelector" (dict "matchLabels" (fromYaml $.selector)) }}{{ end }}
{{- $out = append $out $c }}
{{- end }}
{{- toYaml $out }}
{{- end }}
