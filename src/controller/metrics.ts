// Prometheus metrics: controller-runtime's names, so existing dashboards for
// kubebuilder operators work, plus Teal's own teal_* families. No object
// names as label values: cardinality stays bounded with 10k Apps.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { WorkqueueMetrics } from '../kube/workqueue.ts';
import type { ProviderMetrics } from '../previews/providers/index.ts';

const CONTROLLER = 'app';
const latencyBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class Metrics {
  readonly registry = new Registry();
  readonly reconcileTotal = new Counter({
    name: 'controller_runtime_reconcile_total',
    help: 'Total number of reconciliations per controller',
    labelNames: ['controller', 'result'],
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: 'controller_runtime_reconcile_errors_total',
    help: 'Total number of reconciliation errors per controller',
    labelNames: ['controller'],
    registers: [this.registry],
  });
  readonly reconcileTime = new Histogram({
    name: 'controller_runtime_reconcile_time_seconds',
    help: 'Length of time per reconciliation per controller',
    labelNames: ['controller'],
    buckets: latencyBuckets,
    registers: [this.registry],
  });
  readonly maxConcurrent = new Gauge({
    name: 'controller_runtime_max_concurrent_reconciles',
    help: 'Maximum number of concurrent reconciles per controller',
    labelNames: ['controller'],
    registers: [this.registry],
  });
  readonly activeWorkers = new Gauge({
    name: 'controller_runtime_active_workers',
    help: 'Number of currently used workers per controller',
    labelNames: ['controller'],
    registers: [this.registry],
  });
  private readonly wqDepth = new Gauge({
    name: 'workqueue_depth',
    help: 'Current depth of workqueue',
    labelNames: ['name', 'controller'],
    registers: [this.registry],
  });
  private readonly wqAdds = new Counter({
    name: 'workqueue_adds_total',
    help: 'Total number of adds handled by workqueue',
    labelNames: ['name', 'controller'],
    registers: [this.registry],
  });
  private readonly wqLatency = new Histogram({
    name: 'workqueue_queue_duration_seconds',
    help: 'How long in seconds an item stays in workqueue before being requested',
    labelNames: ['name', 'controller'],
    buckets: latencyBuckets,
    registers: [this.registry],
  });
  private readonly wqWork = new Histogram({
    name: 'workqueue_work_duration_seconds',
    help: 'How long in seconds processing an item from workqueue takes',
    labelNames: ['name', 'controller'],
    buckets: latencyBuckets,
    registers: [this.registry],
  });
  private readonly wqRetries = new Counter({
    name: 'workqueue_retries_total',
    help: 'Total number of retries handled by workqueue',
    labelNames: ['name', 'controller'],
    registers: [this.registry],
  });
  readonly wqUnfinished = new Gauge({
    name: 'workqueue_unfinished_work_seconds',
    help: 'How many seconds of work has been done that is in progress and has not been observed by work_duration',
    labelNames: ['name', 'controller'],
    registers: [this.registry],
  });
  readonly wqLongest = new Gauge({
    name: 'workqueue_longest_running_processor_seconds',
    help: 'How many seconds has the longest running processor for workqueue been running',
    labelNames: ['name', 'controller'],
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'leader_election_master_status',
    help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
    labelNames: ['name'],
    registers: [this.registry],
  });
  readonly builds = new Counter({
    name: 'teal_builds_total',
    help: 'Builds finished, by result',
    labelNames: ['result'],
    registers: [this.registry],
  });
  readonly buildDuration = new Histogram({
    name: 'teal_build_duration_seconds',
    help: 'Duration of finished builds',
    labelNames: ['result'],
    buckets: [5, 15, 30, 60, 120, 300, 600, 1200, 1800],
    registers: [this.registry],
  });
  readonly promotions = new Counter({
    name: 'teal_promotions_total',
    help: 'Revisions made active, by how (auto, api, cli, kubectl, undo, first-release, fast-track)',
    labelNames: ['via'],
    registers: [this.registry],
  });
  readonly commitToActive = new Histogram({
    name: 'teal_commit_to_active_seconds',
    help: 'From a commit resolved to its revision active',
    buckets: [5, 15, 30, 60, 120, 300, 600, 1800, 3600, 14400, 86400],
    registers: [this.registry],
  });
  readonly webhooks = new Counter({
    name: 'teal_webhook_deliveries_total',
    help: 'Webhook deliveries, by provider and result',
    labelNames: ['provider', 'result'],
    registers: [this.registry],
  });
  readonly logins = new Counter({
    name: 'teal_dashboard_logins_total',
    help: 'Dashboard logins, by method (token: POST /api/v1/session with a token; code: with a login code; oidc) and result: ok, bad_token, bad_code, rate_limited, review_failed (token, code); ok, bad_state, bad_token, provider_error (oidc)',
    labelNames: ['method', 'result'],
    registers: [this.registry],
  });
  readonly streams = new Gauge({
    name: 'teal_dashboard_streams',
    help: "The dashboard's live streams open (GET /api/v1/stream): one per browser, whatever its tabs",
    registers: [this.registry],
  });
  readonly streamEvents = new Counter({
    name: 'teal_dashboard_stream_events_total',
    help: 'Events written to live streams, by type: snapshot, upsert, delete, resumed, reset, ended',
    labelNames: ['type'],
    registers: [this.registry],
  });
  readonly streamResets = new Counter({
    name: 'teal_dashboard_stream_resets_total',
    help: 'Live streams whose client fell too far behind: its buffer was dropped, and it gets a reset and a snapshot',
    registers: [this.registry],
  });
  readonly streamsRefused = new Counter({
    name: 'teal_dashboard_streams_refused_total',
    help: 'Live streams refused with a 429, by limit: total (--dashboard-max-streams) or session (--dashboard-max-streams-per-session)',
    labelNames: ['limit'],
    registers: [this.registry],
  });
  readonly gitResolve = new Histogram({
    name: 'teal_git_resolve_duration_seconds',
    help: 'ls-remote latency, one per repository poll',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly gitErrors = new Counter({
    name: 'teal_git_resolve_errors_total',
    help: 'ls-remote failures, by reason',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly analysisRuns = new Counter({
    name: 'teal_analysis_runs_total',
    help: 'Runs of checks that ended, by kind (pre or post promotion) and phase',
    labelNames: ['kind', 'phase'],
    registers: [this.registry],
  });
  readonly analysisMeasurements = new Counter({
    name: 'teal_analysis_measurements_total',
    help: 'Measurements of checks that ended, by provider (job, web, prometheus) and phase',
    labelNames: ['provider', 'phase'],
    registers: [this.registry],
  });
  readonly analysisMeasurementDuration = new Histogram({
    name: 'teal_analysis_measurement_duration_seconds',
    help: 'From the start of a measurement to its result, by provider',
    labelNames: ['provider'],
    // A web or prometheus check answers in milliseconds to seconds; a job check takes minutes.
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200],
    registers: [this.registry],
  });
  readonly notifications = new Counter({
    name: 'teal_notifications_total',
    help: 'Notification attempts by destination type, trigger and result (delivered, retrying, failed), and pending ones dropped past the outbox limit (result dropped)',
    labelNames: ['type', 'trigger', 'result'],
    registers: [this.registry],
  });
  readonly notificationDuration = new Histogram({
    name: 'teal_notification_delivery_duration_seconds',
    help: 'One delivery attempt, from the request to its answer (or timeout), by destination type',
    labelNames: ['type'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly previewProviderRequests = new Counter({
    name: 'teal_preview_provider_requests_total',
    help: "Requests to the previews' git hosts' APIs, by provider and answer: the HTTP status (304: answered from Teal's cache, free on GitHub), or network, timeout, refused (--egress-allow)",
    labelNames: ['provider', 'code'],
    registers: [this.registry],
  });
  readonly previewRateLimitRemaining = new Gauge({
    name: 'teal_preview_provider_rate_limit_remaining',
    help: "The rate-limit budget a previews' git host last reported (x-ratelimit-remaining, RateLimit-Remaining), by provider",
    labelNames: ['provider'],
    registers: [this.registry],
  });
  readonly previews = new Gauge({
    name: 'teal_previews',
    help: "Previews by state (Building, Deploying, Ready, Failed, Asleep, AwaitingApproval, Expired), as the parent Apps' status.previews records them",
    labelNames: ['state'],
    registers: [this.registry],
  });
  readonly apps = new Gauge({
    name: 'teal_apps',
    help: 'Apps by phase',
    labelNames: ['phase'],
    registers: [this.registry],
  });

  /** Hooks for the App controller's workqueue. */
  workqueue(name = CONTROLLER): WorkqueueMetrics {
    const labels = { name, controller: CONTROLLER };
    return {
      add: () => this.wqAdds.inc(labels),
      depth: (n) => this.wqDepth.set(labels, n),
      queueLatency: (s) => this.wqLatency.observe(labels, s),
      workDuration: (s) => this.wqWork.observe(labels, s),
      retry: () => this.wqRetries.inc(labels),
    };
  }

  /** Hooks for the previews' provider clients (src/previews/providers/http.ts). */
  previewProviders(): ProviderMetrics {
    return {
      request: (provider, code) => this.previewProviderRequests.inc({ provider, code }),
      rateLimitRemaining: (provider, remaining) => this.previewRateLimitRemaining.set({ provider }, remaining),
    };
  }

  reconciled(seconds: number, result: 'success' | 'error' | 'requeue_after'): void {
    this.reconcileTotal.inc({ controller: CONTROLLER, result });
    this.reconcileTime.observe({ controller: CONTROLLER }, seconds);
    if (result === 'error') this.reconcileErrors.inc({ controller: CONTROLLER });
  }

  workers(max: number, active: number): void {
    this.maxConcurrent.set({ controller: CONTROLLER }, max);
    this.activeWorkers.set({ controller: CONTROLLER }, active);
  }
}
