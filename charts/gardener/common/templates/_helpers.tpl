{{/* Labels every object of the release carries (Helm's recommended app.kubernetes.io set). */}}
{{- define "gardener.labels" -}}
app.kubernetes.io/part-of: gardener
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.global.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The image reference of one of our binaries: global registry, its name, tag or appVersion. */}}
{{- define "gardener.image" -}}
{{- $root := index . 0 -}}{{- $name := index . 1 -}}
{{- printf "%s/%s:%s" $root.Values.global.image.repository $name (default $root.Chart.AppVersion $root.Values.global.image.tag) -}}
{{- end -}}

{{/* Pod-level security: an unprivileged user, the runtime's seccomp profile. */}}
{{- define "gardener.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Container-level security: no privilege escalation, no capabilities, read-only root. */}}
{{- define "gardener.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* The environment every binary reads: its pod name (leader identity) and namespace (Lease). */}}
{{- define "gardener.downwardEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end -}}

{{/* Probes on the binary's HTTP port: /healthz (process alive) and /readyz (caches synced).
The liveness probe finds a hung process, not a busy host: with the default 1 s timeout and three
failures, every replica of the controller-manager, gardenlet and scheduler was restarted at once
on a saturated 2-core host (make e2e, 2026-11-28), which took the admission webhooks down and
only added load. A process is restarted after a minute without an answer within 5 s. */}}
{{- define "gardener.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: http
  initialDelaySeconds: 5
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 6
readinessProbe:
  httpGet:
    path: /readyz
    port: http
  periodSeconds: 2
  timeoutSeconds: 3
  failureThreshold: 3
{{- end -}}

{{/* policy/v1 where the cluster serves it (1.21+), else policy/v1beta1 (1.20). */}}
{{- define "gardener.pdbApiVersion" -}}
{{- if semverCompare ">=1.21-0" .Capabilities.KubeVersion.Version -}}policy/v1{{- else -}}policy/v1beta1{{- end -}}
{{- end -}}
