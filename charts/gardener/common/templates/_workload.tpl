{{/*
The Deployment, metrics Service and PodDisruptionBudget of one of our binaries. Takes a dict:
  root: the chart's root context ($)
  name: the binary and object name (gardener-scheduler, gardenlet, ...)
  v: the component's values (replicas, image.name, port, logLevel, logFormat,
     leaderElection.enabled, resources, nodeSelector, tolerations, affinity,
     podDisruptionBudget.{enabled,minAvailable})
  priorityClassName: "" for none
  configChecksum: rolls the pods when the configuration changes
  args: extra arguments (list)
  configFile: true when the binary reads the ConfigMap <name>-config, mounted at
     /etc/<name>/config.yaml and passed as --config
  volumes, volumeMounts: extra ones (lists)
  ports: extra container ports (list of {name, containerPort}), e.g. webhooks
*/}}
{{- define "gardener.workload" -}}
{{- $root := .root }}{{- $v := .v }}{{- $name := .name }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "gardener.labels" $root | nindent 4 }}
    app.kubernetes.io/name: {{ $name }}
spec:
  replicas: {{ $v.replicas }}
  revisionHistoryLimit: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ $name }}
      app.kubernetes.io/instance: {{ $root.Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ $name }}
        app.kubernetes.io/instance: {{ $root.Release.Name }}
        app.kubernetes.io/part-of: gardener
      annotations:
        checksum/config: {{ .configChecksum }}
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $v.port | quote }}
    spec:
      serviceAccountName: {{ $name }}
      {{- with .priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- include "gardener.podSecurityContext" $root | nindent 8 }}
      terminationGracePeriodSeconds: 30
      containers:
      - name: {{ $name }}
        image: {{ include "gardener.image" (list $root $v.image.name) }}
        imagePullPolicy: {{ $root.Values.global.image.pullPolicy }}
        command: ["/usr/local/bin/{{ $name }}"]
        args:
        {{- if .configFile }}
        - --config=/etc/{{ $name }}/config.yaml
        {{- end }}
        - --leader-election={{ $v.leaderElection.enabled }}
        - --metrics-bind-address=0.0.0.0:{{ $v.port }}
        - --log-level={{ $v.logLevel }}
        - --log-format={{ $v.logFormat }}
        {{- range .args }}
        - {{ . }}
        {{- end }}
        env:
        {{- include "gardener.downwardEnv" $root | nindent 8 }}
        ports:
        - name: http
          containerPort: {{ $v.port }}
          protocol: TCP
        {{- range .ports }}
        - name: {{ .name }}
          containerPort: {{ .containerPort }}
          protocol: TCP
        {{- end }}
        {{- include "gardener.probes" $root | nindent 8 }}
        resources:
          {{- toYaml $v.resources | nindent 10 }}
        securityContext:
          {{- include "gardener.containerSecurityContext" $root | nindent 10 }}
        volumeMounts:
        {{- if .configFile }}
        - name: config
          mountPath: /etc/{{ $name }}
          readOnly: true
        {{- end }}
        {{- with .volumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      volumes:
      {{- if .configFile }}
      - name: config
        configMap:
          name: {{ $name }}-config
      {{- end }}
      {{- with .volumes }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "gardener.labels" $root | nindent 4 }}
    app.kubernetes.io/name: {{ $name }}
spec:
  selector:
    app.kubernetes.io/name: {{ $name }}
    app.kubernetes.io/instance: {{ $root.Release.Name }}
  ports:
  - name: metrics
    port: {{ $v.port }}
    targetPort: http
{{- if and $v.podDisruptionBudget.enabled (gt (int $v.replicas) 1) }}
---
apiVersion: {{ include "gardener.pdbApiVersion" $root }}
kind: PodDisruptionBudget
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "gardener.labels" $root | nindent 4 }}
    app.kubernetes.io/name: {{ $name }}
spec:
  minAvailable: {{ $v.podDisruptionBudget.minAvailable }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ $name }}
      app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end }}
{{- end -}}
