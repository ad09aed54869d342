{{- define "aivis.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "aivis.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "aivis.labels" -}}
{{ include "aivis.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "aivis.masterKeySecret" -}}
{{- .Values.masterKey.existingSecret | default (printf "%s-master-key" (include "aivis.fullname" .)) -}}
{{- end -}}

{{/* One replica on store sqlite: its data is one volume's. */}}
{{- define "aivis.check" -}}
{{- if and (eq (index .Values.settings "AIVIS_STORE" | default "sqlite") "sqlite") (or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled) -}}
{{- fail "store sqlite runs one replica: set settings.AIVIS_STORE postgres (with AIVIS_BUS nats and AIVIS_COUNTER redis) for more" -}}
{{- end -}}
{{- end -}}
