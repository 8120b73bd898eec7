// The App page's view of one App (GET /api/v1/namespaces/:ns/apps/:name):
// pure functions from what the API answers to what the page shows, so the
// timeline, the countdown and the actions' explanations are tested without a
// browser (test/unit/ui-app-view.test.ts). Every part of the answer may be
// missing; strings are shown as text, never as HTML.
import type { Action } from '../app/intents.ts';
import type { PreviewsView } from '../app/previews-view.ts';

/** A revision as status shows it (active, preview). */
export interface RevisionLike {
  revision?: number;
  image?: string;
  podTemplateHash?: string;
  commit?: string;
  availableAt?: string;
}

export interface MeasurementLike {
  n?: number;
  phase?: string;
  value?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
}

export interface CheckLike {
  name?: string;
  provider?: string;
  phase?: string;
  message?: string;
  successful?: number;
  failed?: number;
  inconclusive?: number;
  error?: number;
  measurements?: MeasurementLike[];
}

export interface RunLike {
  revision?: number;
  phase?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  checks?: CheckLike[];
}

export interface HistoryLike {
  revision?: number;
  podTemplateHash?: string;
  commit?: string;
  image?: string;
  createdAt?: string;
  promotedAt?: string;
  promotedBy?: string;
  promotedVia?: string;
  checksSkipped?: boolean;
}

export interface RevisionPodsLike {
  revision?: number;
  podTemplateHash?: string;
  image?: string;
  desired?: number;
  ready?: number;
  available?: number;
  scaleDownAt?: string;
  config?: { kind?: string; source?: string; hash?: string }[];
}

export interface ActorLike {
  by?: string;
  via?: string;
  at?: string;
}

/** What the App page reads of the API's view of an App. */
export interface AppDetailLike {
  metadata: { namespace: string; name: string; resourceVersion?: string };
  status?: {
    phase?: string;
    message?: string;
    source?: { ref?: string; commit?: string; shortCommit?: string; author?: string; subject?: string };
    build?: {
      commit?: string;
      job?: string;
      phase?: string;
      startedAt?: string;
      finishedAt?: string;
      message?: string;
    };
    promotion?: ActorLike & { revision?: number };
    abort?: ActorLike & { revision?: number };
    pause?: ActorLike;
    restart?: ActorLike & {
      revision?: number;
      startedAt?: string;
      evicting?: string[];
      podsReplaced?: number;
      finishedAt?: string;
      message?: string;
    };
    notifications?: {
      pending?: { trigger?: string; destination?: string; at?: string }[];
      dropped?: number;
      lastDelivered?: { trigger?: string; destination?: string; at?: string; message?: string };
      lastFailure?: { trigger?: string; destination?: string; at?: string; message?: string };
    };
  };
  revisions?: { active?: RevisionLike; preview?: RevisionLike; stable?: RevisionLike; history?: HistoryLike[] };
  analysis?: { prePromotion?: RunLike; postPromotion?: RunLike };
  pendingIntents?: ({ action?: string } & ActorLike)[];
  replicaSets?: RevisionPodsLike[];
  events?: { type?: string; reason?: string; message?: string; count?: number; at?: string }[];
  /** With spec.previews: its pull requests' previews (app/previews-view.ts), the Previews tab. */
  previews?: PreviewsView;
  /** A preview's child App: the App and pull request it previews. */
  previewOf?: { app?: string; number?: number };
}

/**
 * Whether the view shown is older than the App's live row: both known and different (the row and
 * the view come from the same informer cache, so a different version is a change not yet read).
 */
export function isStale(shown: string | undefined, live: string | undefined): boolean {
  return shown !== undefined && live !== undefined && shown !== live;
}

/** The App's details (pods, Events) changed since the view shown was read: the row's detail count moved. */
export function detailChanged(shown: number | undefined, live: number | undefined): boolean {
  return shown !== undefined && live !== undefined && shown !== live;
}

// ---- the timeline ----

/** done: behind us; current: where the release stands; failed; waiting: not reached; none: not part of this release. */
export type StepState = 'done' | 'current' | 'failed' | 'waiting' | 'none';

export interface Step {
  key: 'commit' | 'build' | 'preview' | 'checks' | 'promotion' | 'active' | 'scale-down';
  title: string;
  state: StepState;
  /** Label and value pairs, shown as text. */
  facts: [string, string][];
}

/** The digest of an image reference (repo@sha256:...), or its tag when it has none. */
export function digestOf(image: string | undefined): string {
  if (!image) return '';
  const at = image.indexOf('@');
  if (at >= 0) return image.slice(at + 1);
  const slash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  return colon > slash ? image.slice(colon + 1) : '';
}

/** A digest cut to its first 12 hex digits, as registries' UIs show it; a tag as it is. */
export function shortDigest(image: string | undefined): string {
  const digest = digestOf(image);
  return /^sha256:[0-9a-f]{64}$/.test(digest) ? `${digest.slice(0, 19)}…` : digest;
}

/** The pods of a revision, as "available/desired". */
export function podsOf(view: AppDetailLike, revision: number | undefined): string {
  const rs = view.replicaSets?.find((r) => r.revision === revision);
  if (revision === undefined || !rs) return '';
  return `${rs.available ?? 0}/${rs.desired ?? 0}`;
}

const RUN_STATE: Record<string, StepState> = {
  Running: 'current',
  Successful: 'done',
  Failed: 'failed',
  Error: 'failed',
  Inconclusive: 'current',
  Cancelled: 'failed',
};

/** "2 of 3 passed", or the run's phase when it has no checks. */
export function checksSummary(run: RunLike | undefined): string {
  const checks = run?.checks ?? [];
  if (checks.length === 0) return run?.phase ?? '';
  const passed = checks.filter((c) => c.phase === 'Successful').length;
  return `${run?.phase ?? ''}: ${passed} of ${checks.length} passed`;
}

/** The history entry that made the active revision active: who promoted it, when, how. */
export function promotionOf(view: AppDetailLike): HistoryLike | undefined {
  const active = view.revisions?.active?.revision;
  return view.revisions?.history?.findLast((h) => h.revision === active && h.promotedAt !== undefined);
}

function commitStep(view: AppDetailLike): Step {
  const source = view.status?.source;
  if (!source) return { key: 'commit', title: 'Commit', state: 'none', facts: [['source', 'an image, no git source']] };
  return {
    key: 'commit',
    title: 'Commit',
    state: 'done',
    facts: [
      ['commit', source.shortCommit ?? source.commit ?? ''],
      ['subject', source.subject ?? ''],
      ['author', source.author ?? ''],
      ['ref', source.ref ?? ''],
    ],
  };
}

function buildStep(view: AppDetailLike): Step {
  const build = view.status?.build;
  if (!build) return { key: 'build', title: 'Build', state: 'none', facts: [] };
  const state: StepState = build.phase === 'Succeeded' ? 'done' : build.phase === 'Failed' ? 'failed' : 'current';
  return {
    key: 'build',
    title: 'Build',
    state,
    facts: [
      ['job', build.job ?? ''],
      ['phase', build.phase ?? ''],
      ['message', build.message ?? ''],
    ],
  };
}

function previewStep(view: AppDetailLike): Step {
  const preview = view.revisions?.preview;
  if (preview?.revision === undefined) {
    return { key: 'preview', title: 'Preview', state: view.revisions?.active ? 'done' : 'waiting', facts: [] };
  }
  return {
    key: 'preview',
    title: 'Preview',
    state: 'current',
    facts: [
      ['revision', String(preview.revision)],
      ['digest', shortDigest(preview.image)],
      ['pods available', podsOf(view, preview.revision)],
    ],
  };
}

function checksStep(view: AppDetailLike): Step {
  const run = view.analysis?.prePromotion;
  if (!run) return { key: 'checks', title: 'Pre-promotion checks', state: 'none', facts: [] };
  const inFlight = view.revisions?.preview?.revision;
  // A run of an earlier revision, now active or gone, is behind us whatever its phase.
  const state =
    run.revision !== undefined && run.revision !== inFlight ? 'done' : (RUN_STATE[run.phase ?? ''] ?? 'current');
  return {
    key: 'checks',
    title: 'Pre-promotion checks',
    state,
    facts: [
      ['revision', run.revision !== undefined ? String(run.revision) : ''],
      ['result', checksSummary(run)],
    ],
  };
}

function promotionStep(view: AppDetailLike): Step {
  const underWay = view.status?.promotion;
  if (underWay) {
    return {
      key: 'promotion',
      title: 'Promotion',
      state: 'current',
      facts: [
        ['revision', String(underWay.revision ?? '')],
        ['by', underWay.by ?? ''],
        ['via', underWay.via ?? ''],
        ['at', underWay.at ?? ''],
      ],
    };
  }
  const done = promotionOf(view);
  // A revision in preview is not promoted yet: the active one's promotion is in the history.
  if (!done || view.revisions?.preview) return { key: 'promotion', title: 'Promotion', state: 'waiting', facts: [] };
  return {
    key: 'promotion',
    title: 'Promotion',
    state: 'done',
    facts: [
      ['revision', String(done.revision ?? '')],
      ['by', done.promotedBy ?? ''],
      ['via', `${done.promotedVia ?? ''}${done.checksSkipped ? ', checks skipped' : ''}`],
      ['at', done.promotedAt ?? ''],
    ],
  };
}

function activeStep(view: AppDetailLike): Step {
  const active = view.revisions?.active;
  if (active?.revision === undefined) return { key: 'active', title: 'Active', state: 'waiting', facts: [] };
  return {
    key: 'active',
    title: 'Active',
    state: view.revisions?.preview ? 'done' : 'current',
    facts: [
      ['revision', String(active.revision)],
      ['digest', shortDigest(active.image)],
      ['pods available', podsOf(view, active.revision)],
    ],
  };
}

function scaleDownStep(view: AppDetailLike, now: number): Step {
  const active = view.revisions?.active?.revision;
  const old = view.replicaSets
    ?.filter((r) => r.revision !== active && r.scaleDownAt !== undefined && (r.desired ?? 0) > 0)
    .sort((a, b) => (a.scaleDownAt ?? '').localeCompare(b.scaleDownAt ?? ''))[0];
  if (!old) return { key: 'scale-down', title: 'Old revision scaled down', state: 'none', facts: [] };
  return {
    key: 'scale-down',
    title: 'Old revision scaled down',
    state: 'current',
    facts: [
      ['revision', String(old.revision ?? '')],
      ['pods', `${old.available ?? 0}/${old.desired ?? 0}`],
      ['scales down', countdown(old.scaleDownAt, now)],
    ],
  };
}

/** The release as a line of steps: commit → build → preview → checks → promotion → active → scale-down. */
export function timelineOf(view: AppDetailLike, now: number): Step[] {
  return [
    commitStep(view),
    buildStep(view),
    previewStep(view),
    checksStep(view),
    promotionStep(view),
    activeStep(view),
    scaleDownStep(view, now),
  ];
}

/** "in 4m 05s", "in 1h 02m", or "now" once due; "" for no time or one that cannot be read. */
export function countdown(at: string | undefined, now: number): string {
  const due = at ? Date.parse(at) : Number.NaN;
  if (Number.isNaN(due)) return '';
  const seconds = Math.ceil((due - now) / 1000);
  if (seconds <= 0) return 'now';
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  const two = (n: number) => String(n).padStart(2, '0');
  return h > 0 ? `in ${h}h ${two(m)}m` : m > 0 ? `in ${m}m ${two(s)}s` : `in ${s}s`;
}

// ---- restart and notifications ----

/** The latest restart, in words: under way with its pods replaced so far, or how it ended. */
export function restartProgress(view: AppDetailLike): string {
  const r = view.status?.restart;
  if (!r) return '';
  const who = `requested by ${r.by ?? '?'} (${r.via ?? '?'})`;
  if (r.finishedAt) {
    return `revision ${r.revision ?? '?'} restarted: ${r.podsReplaced ?? 0} pods replaced, ${who}${r.message ? `: ${r.message}` : ''}`;
  }
  const evicting = r.evicting?.length ?? 0;
  return `revision ${r.revision ?? '?'} restarting${evicting > 0 ? `, ${evicting} pods being evicted` : ''}, ${who}`;
}

/** Notifications' delivery state, one line each: waiting, the latest delivered, the latest failed for good. */
export function notificationLines(view: AppDetailLike): [string, string][] {
  const n = view.status?.notifications;
  if (!n) return [];
  const one = (x: { trigger?: string; destination?: string; at?: string; message?: string }) =>
    `${x.trigger ?? '?'} to ${x.destination ?? '?'} at ${x.at ?? '?'}${x.message ? `: ${x.message}` : ''}`;
  return [
    ...(n.pending ?? []).map((p): [string, string] => ['waiting', one(p)]),
    ...(n.dropped ? [['dropped', `${n.dropped} notifications`] as [string, string]] : []),
    ...(n.lastDelivered ? [['delivered', one(n.lastDelivered)] as [string, string]] : []),
    ...(n.lastFailure ? [['failed', one(n.lastFailure)] as [string, string]] : []),
  ];
}

// ---- actions ----

/** One action as GET .../actions explains it: only what the page reads. */
export interface ActionEntryLike {
  action: Action;
  allowed: boolean;
  rules: { allowed: boolean; reason?: string };
  rbac: { allowed: boolean | 'unknown'; reason?: string };
  args?: { name: string; flag: string }[];
  kubectl: string;
  curl: string;
}

/** Why an action's button is disabled, in the rules' or RBAC's own words; undefined when it is enabled. */
export function whyDisabled(entry: ActionEntryLike): string | undefined {
  if (entry.allowed) return undefined;
  const reasons = [
    ...(entry.rbac.allowed !== true ? [`not allowed: ${entry.rbac.reason ?? 'RBAC denies it'}`] : []),
    ...(!entry.rules.allowed ? [entry.rules.reason ?? 'the rules refuse it now'] : []),
  ];
  return reasons.length > 0 ? reasons.join('; ') : 'not allowed';
}

/**
 * The body an action is sent with from this page. Promote pins the revision the page showed
 * in preview, so a newer one that arrived meanwhile is refused (409) rather than promoted
 * unseen; undo to a revision of the history names it.
 */
export function actionBody(action: Action, view: AppDetailLike, toRevision?: number): Record<string, number | boolean> {
  if (action === 'promote') {
    const shown = view.revisions?.preview?.revision;
    return shown !== undefined ? { revision: shown } : {};
  }
  if (action === 'undo' && toRevision !== undefined) return { toRevision };
  return {};
}

/** The curl call of an action with its body, from the one the API gives for no arguments. */
export function curlWithBody(curl: string, body: Record<string, number | boolean>): string {
  if (Object.keys(body).length === 0) return curl;
  // The body holds argument names and numbers or booleans only: no shell quoting needed.
  return curl.replace(' "$TEAL', ` -H 'Content-Type: application/json' -d '${JSON.stringify(body)}' "$TEAL`);
}

/** The kubectl command of an action with its body, each argument by the flag the actions answer names. */
export function kubectlWithBody(entry: ActionEntryLike, body: Record<string, number | boolean>): string {
  const flags = Object.entries(body).map(([name, value]) => {
    const flag = entry.args?.find((a) => a.name === name)?.flag ?? `--${name}`;
    return value === true ? ` ${flag}` : ` ${flag} ${String(value)}`;
  });
  return entry.kubectl + flags.join('');
}

// ---- a check's measurements, drawn ----

/**
 * The points of a small line chart of a check's numeric measurements, oldest first, in a box
 * of width × height (SVG coordinates, y downwards); undefined when fewer than two values are
 * numbers. Hand-drawn as one SVG polyline: a chart library would not fit the 60 KB budget's
 * spirit for one line, and the table beside it keeps every value readable.
 */
export function sparkline(values: readonly (string | undefined)[], width: number, height: number): string | undefined {
  const numbers = values.map((v) => (v === undefined || v.trim() === '' ? Number.NaN : Number(v)));
  const points = numbers.flatMap((n, i) => (Number.isFinite(n) ? [[i, n] as const] : []));
  if (points.length < 2) return undefined;
  const ys = points.map(([, y]) => y);
  const low = Math.min(...ys);
  const span = Math.max(...ys) - low || 1;
  const last = Math.max(numbers.length - 1, 1);
  const round = (n: number) => Math.round(n * 10) / 10;
  return points
    .map(([i, y]) => `${round((i / last) * width)},${round(height - ((y - low) / span) * height)}`)
    .join(' ');
}
