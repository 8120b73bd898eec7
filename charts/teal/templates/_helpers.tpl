{{- define "teal.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "teal.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "teal.selectorLabels" -}}
app.kubernetes.io/name: {{ include "teal.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "teal.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "teal.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: teal
{{- end -}}

{{- define "teal.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "teal.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "teal.sessionKeySecretName" -}}
{{- default (printf "%s-session-key" (include "teal.fullname" .)) .Values.sessionKey.existingSecret -}}
{{- end -}}

{{- define "teal.webhookSecretName" -}}
{{- default (printf "%s-webhook" (include "teal.fullname" .)) .Values.webhookSecret.existingSecret -}}
{{- end -}}

{{/* The operator's rules on namespaced resources: every watched namespace, or all. */}}
{{- define "teal.namespacedRules" -}}
# The App cache, finalizers, and intents written by the HTTP API on a caller's behalf
# (the admission policy asks the writer for the action verb too).
# Previews: each open pull request's child App created (server-side apply) and deleted by uid (controller/executor.ts).
- apiGroups: ["teal.dev"]
  resources: ["apps"]
  verbs: ["get", "list", "watch", "patch", "update", "create", "delete", "promote", "abort", "retry", "undo", "pause", "resume", "restart"]
- apiGroups: ["teal.dev"]
  resources: ["apps/status"]
  verbs: ["get", "update", "patch"]
# Revisions and their Services (server-side apply = patch; create for the first apply).
- apiGroups: ["apps"]
  resources: ["replicasets"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "patch", "update"]
# Builds: Jobs, their pods (the digest is in the termination message) and logs.
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
# The drain-verified switch (spec.strategy.blueGreen.switch): the EndpointSlices of Teal's Services,
# watched (controller/cache.ts), to see that only the new revision's pods are listed before the old goes.
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["list", "watch"]
# restart: the active revision's pods, evicted so their PodDisruptionBudgets hold (never deleted outright).
- apiGroups: [""]
  resources: ["pods/eviction"]
  verbs: ["create"]
# Git credentials, webhook secrets and notification URLs and keys, and the Secrets pod templates
# reference, read by name when used (those every 30 s): never listed or watched. Create and delete:
# the immutable per-revision copies of referenced Secrets (teal.dev/config-copy): Teal deletes no other.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create", "delete"]
# Notifications: a namespace's default destinations (ConfigMap teal-notifications), read when there is news.
# Configuration as part of the revision: ConfigMaps watched as a digest of their content (never their data),
# read when a copy is made; the immutable per-revision copies created, and deleted with their revision.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "delete"]
# Events: recorded on Apps; those about Apps watched too, for the dashboard's App page (one
# cache for every open page, instead of a list per page).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "list", "watch"]
# Ping-pong slots (blueGreen.trafficRouting.gatewayAPI): the HTTPRoutes Apps name, watched (with their
# status: Accepted and ResolvedRefs) only once an App names one; the switch patches their weights.
# Previews (spec.previews.exposure) also apply one HTTPRoute or Ingress per preview, owned by its child App
# (the garbage collector deletes them with it), and list their parent's by label (controller/cluster-client.ts).
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["httproutes"]
  verbs: ["get", "list", "watch", "patch", "create"]
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["list", "create", "patch"]
{{- end -}}

{{/* The HTTP API authenticates and authorizes its callers through the API server. */}}
{{- define "teal.delegationRules" -}}
- apiGroups: ["authentication.k8s.io"]
  resources: ["tokenreviews"]
  verbs: ["create"]
- apiGroups: ["authorization.k8s.io"]
  resources: ["subjectaccessreviews"]
  verbs: ["create"]
{{- end -}}

{{- define "teal.leaseRules" -}}
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
{{- end -}}

{{- /* --shards: list the election's Leases, delete the member Leases of replicas gone, and a Warning
Event on a shard Lease held by no live member (docs/sharding.md); release namespace only. */}}
{{- define "teal.shardLeaseRules" -}}
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["list", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- end -}}

{{- define "teal.oidcSecretName" -}}
{{- default (printf "%s-oidc" (include "teal.fullname" .)) .Values.oidc.clientSecret.existingSecret -}}
{{- end -}}

{{/*
The operator's rights in the build namespace (buildNamespace), in namespaced mode: build Jobs
(created suspended, started once their Secret copies exist, deleted), their pods and logs, the
per-build copies of the git, push and CA Secrets (created, read to check their owner, and read
for the log's masking), and the CA ConfigMap of build.caConfigMap (read before each build). The
cluster-wide ClusterRole has these everywhere already.
*/}}
{{- define "teal.buildNamespaceRules" -}}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get"]
{{- end -}}
