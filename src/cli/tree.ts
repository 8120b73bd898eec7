// `kubectl teal get`: the App as a tree, in the layout of
// `kubectl argo rollouts get rollout`. The view is built first (also what
// -o json|yaml prints), then rendered.
import type { V1Job, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { ANN_COMMIT, ANN_IMAGE, ANN_REVISION, LABEL_HASH } from '../app/labels.ts';
import type { AnalysisKind, AppAnalysisRun } from '../app/schema.ts';
import type { TrafficCheckStatus } from '../app/traffic-schema.ts';
import { type AppObject, since } from './app-object.ts';
import { age, type Colour, paint, showProgress, showStatus, table } from './output.ts';

export type Mark = 'active' | 'preview' | 'stable';

export interface PodView {
  name: string;
  /** Ready containers out of all, as kubectl shows: 1/1. */
  ready: string;
  status: string;
  restarts: number;
  createdAt: string | undefined;
}

export interface ReplicaSetView {
  name: string;
  /** Healthy, Progressing or ScaledDown. */
  status: string;
  desired: number;
  current: number;
  ready: number;
  available: number;
  createdAt: string | undefined;
}

export interface RevisionView {
  revision: number;
  marks: Mark[];
  podTemplateHash: string;
  image: string;
  commit?: string;
  /** Missing when the status names a revision whose ReplicaSet is gone, or that the user may not list. */
  replicaSet?: ReplicaSetView;
  /** The ReplicaSet the status names, shown when replicaSet is missing. */
  replicaSetName?: string;
  pods: PodView[];
  /** The runs of checks on this revision, pre-promotion first: status as the operator wrote it. */
  analysis?: AnalysisRunView[];
  /** Promoted with --skip-checks (or --full) before its checks passed, as history records. */
  checksSkipped?: true;
}

/** A run of checks (status.prePromotionAnalysis or postPromotionAnalysis), with which of the two it is. */
export type AnalysisRunView = AppAnalysisRun & { kind: AnalysisKind };

export interface BuildView {
  job: string;
  commit: string;
  phase: string;
  message?: string;
  createdAt: string | undefined;
  pods: PodView[];
}

export interface AppView {
  name: string;
  namespace: string;
  phase: string;
  message: string;
  generation: number | undefined;
  observedGeneration: number | undefined;
  createdAt: string | undefined;
  source?: string;
  image?: string;
  /** Who paused the App with the pause action, or spec.paused. */
  pausedBy?: string;
  replicas: number;
  /** The status counts (src/rollout/counts.ts), as `kubectl argo rollouts get` shows them; unset until counted. */
  current?: number;
  updated?: number;
  ready?: number;
  available?: number;
  build?: BuildView;
  /** The traffic check of the latest switch, as status has it. */
  trafficCheck?: TrafficCheckStatus;
  revisions: RevisionView[];
  /** Kinds the user may not list, so left out: replicasets, pods, jobs. */
  hidden?: string[];
}

/**
 * A timestamp as client-node's typed clients give it (toISOString of a Date), whichever
 * reader read it: rest.ts's gives the API server's text ("...:05Z"), client-node a Date.
 */
const iso = (t: string | Date | undefined): string | undefined => {
  if (t === undefined) return undefined;
  const date = t instanceof Date ? t : new Date(t);
  return Number.isNaN(date.getTime()) ? String(t) : date.toISOString();
};

/** The pod's state in kubectl's words: a waiting or terminated reason, else its phase. */
export function podStatus(pod: V1Pod): string {
  if (pod.metadata?.deletionTimestamp) return 'Terminating';
  for (const c of pod.status?.containerStatuses ?? []) {
    if (c.state?.waiting?.reason && c.state.waiting.reason !== 'ContainerCreating') return c.state.waiting.reason;
    if (c.state?.terminated?.reason && pod.status?.phase !== 'Succeeded') return c.state.terminated.reason;
  }
  if (pod.status?.phase === 'Succeeded') return 'Completed';
  return pod.status?.phase ?? 'Unknown';
}

export function podView(pod: V1Pod): PodView {
  const statuses = pod.status?.containerStatuses ?? [];
  const total = pod.spec?.containers.length ?? statuses.length;
  return {
    name: pod.metadata?.name ?? '',
    ready: `${statuses.filter((c) => c.ready).length}/${total}`,
    status: podStatus(pod),
    restarts: statuses.reduce((n, c) => n + (c.restartCount ?? 0), 0),
    createdAt: iso(pod.metadata?.creationTimestamp),
  };
}

function replicaSetView(rs: V1ReplicaSet): ReplicaSetView {
  const desired = rs.spec?.replicas ?? 0;
  const current = rs.status?.replicas ?? 0;
  const available = rs.status?.availableReplicas ?? 0;
  let status = 'Progressing';
  if (desired === 0 && current === 0) status = 'ScaledDown';
  else if (available >= desired && current === desired) status = 'Healthy';
  return {
    name: rs.metadata?.name ?? '',
    status,
    desired,
    current,
    ready: rs.status?.readyReplicas ?? 0,
    available,
    createdAt: iso(rs.metadata?.creationTimestamp),
  };
}

/** The Job's phase from its status, for a Job the App status no longer describes. */
function jobPhase(job: V1Job): string {
  const s = job.status;
  if (s?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')) return 'Succeeded';
  if (s?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True')) return 'Failed';
  if ((s?.active ?? 0) > 0) return 'Running';
  return 'Pending';
}

const byAge = (a: PodView, b: PodView) =>
  (a.createdAt ?? '').localeCompare(b.createdAt ?? '') || a.name.localeCompare(b.name);

/** A revision per ReplicaSet; then the ones status marks, whose ReplicaSet may be gone. */
function revisionViews(
  replicaSets: V1ReplicaSet[],
  status: NonNullable<AppObject['status']>,
): Map<string, RevisionView> {
  const revisions = new Map<string, RevisionView>();
  for (const rs of replicaSets) {
    const hash = rs.metadata?.labels?.[LABEL_HASH];
    if (!hash) continue;
    const commit = rs.metadata?.annotations?.[ANN_COMMIT];
    revisions.set(hash, {
      revision: Number(rs.metadata?.annotations?.[ANN_REVISION] ?? 0) || 0,
      marks: [],
      podTemplateHash: hash,
      image: rs.metadata?.annotations?.[ANN_IMAGE] ?? rs.spec?.template?.spec?.containers[0]?.image ?? '',
      ...(commit ? { commit } : {}),
      replicaSet: replicaSetView(rs),
      pods: [],
    });
  }
  for (const mark of ['stable', 'active', 'preview'] as const) {
    const r = status[mark];
    if (!r) continue;
    let view = revisions.get(r.podTemplateHash);
    if (!view) {
      view = {
        revision: r.revision,
        marks: [],
        podTemplateHash: r.podTemplateHash,
        image: r.image,
        ...(r.commit ? { commit: r.commit } : {}),
        replicaSetName: r.replicaSet,
        pods: [],
      };
      revisions.set(r.podTemplateHash, view);
    }
    view.marks.push(mark);
  }
  return revisions;
}

/**
 * Each run of checks under the revision it checks: by hash, else by number;
 * a revision known only from its run gets a place of its own.
 */
function placeRuns(status: NonNullable<AppObject['status']>, revisions: Map<string, RevisionView>): void {
  const runs: AnalysisRunView[] = [];
  if (status.prePromotionAnalysis) runs.push({ ...status.prePromotionAnalysis, kind: 'pre' });
  if (status.postPromotionAnalysis) runs.push({ ...status.postPromotionAnalysis, kind: 'post' });
  for (const run of runs) {
    let view = revisions.get(run.podTemplateHash) ?? [...revisions.values()].find((r) => r.revision === run.revision);
    if (!view) {
      view = { revision: run.revision, marks: [], podTemplateHash: run.podTemplateHash, image: '', pods: [] };
      revisions.set(run.podTemplateHash, view);
    }
    view.analysis = [...(view.analysis ?? []), run];
  }
}

/** Marks the revisions history says were promoted without their checks. */
function markSkippedChecks(status: NonNullable<AppObject['status']>, revisions: Map<string, RevisionView>): void {
  for (const entry of status.history ?? []) {
    if (!entry.checksSkipped) continue;
    const view = entry.podTemplateHash
      ? revisions.get(entry.podTemplateHash)
      : [...revisions.values()].find((r) => r.revision === entry.revision);
    if (view) view.checksSkipped = true;
  }
}

/** The current build from status, dated by its Job when that is still there. */
function buildView(status: NonNullable<AppObject['status']>, jobs: V1Job[]): BuildView | undefined {
  const build = status.build;
  if (!build) return undefined;
  const job = jobs.find((j) => j.metadata?.name === build.job);
  return {
    job: build.job,
    commit: build.commit,
    // Status not written yet: the Job says how far it got.
    phase: build.phase || (job ? jobPhase(job) : build.phase),
    ...(build.message ? { message: build.message } : {}),
    createdAt: iso(job?.metadata?.creationTimestamp) ?? build.startedAt,
    pods: [],
  };
}

/** Each pod under its revision (by hash) or under the build (by Job), oldest first. */
function placePods(pods: V1Pod[], revisions: Map<string, RevisionView>, build: BuildView | undefined): void {
  for (const pod of pods) {
    const hash = pod.metadata?.labels?.[LABEL_HASH];
    const jobOf = pod.metadata?.labels?.['batch.kubernetes.io/job-name'] ?? pod.metadata?.labels?.['job-name'];
    if (hash) revisions.get(hash)?.pods.push(podView(pod));
    else if (build && jobOf === build.job) build.pods.push(podView(pod));
  }
  for (const view of revisions.values()) view.pods.sort(byAge);
  build?.pods.sort(byAge);
}

export function appView(
  app: AppObject,
  replicaSets: V1ReplicaSet[],
  pods: V1Pod[],
  jobs: V1Job[],
  hidden: readonly string[] = [],
): AppView {
  const status = app.status ?? {};
  const revisions = revisionViews(replicaSets, status);
  placeRuns(status, revisions);
  markSkippedChecks(status, revisions);
  const build = buildView(status, jobs);
  placePods(pods, revisions, build);
  const git = app.spec.source?.git;
  return {
    name: app.metadata.name,
    namespace: app.metadata.namespace,
    phase: status.phase ?? 'Unknown',
    message: status.message ?? '',
    generation: app.metadata.generation,
    observedGeneration: status.observedGeneration,
    createdAt: app.metadata.creationTimestamp,
    ...(status.source ? { source: status.source.revision } : git ? { source: `${git.url} ${git.ref ?? 'main'}` } : {}),
    ...(app.spec.image ? { image: app.spec.image } : {}),
    ...(status.pause
      ? { pausedBy: `${status.pause.by} (${status.pause.via})` }
      : app.spec.paused
        ? { pausedBy: 'spec.paused' }
        : {}),
    replicas: app.spec.replicas ?? 1,
    ...(status.replicas !== undefined ? { current: status.replicas } : {}),
    ...(status.updatedReplicas !== undefined ? { updated: status.updatedReplicas } : {}),
    ...(status.readyReplicas !== undefined ? { ready: status.readyReplicas } : {}),
    ...(status.availableReplicas !== undefined ? { available: status.availableReplicas } : {}),
    ...(build ? { build } : {}),
    ...(status.trafficCheck ? { trafficCheck: status.trafficCheck } : {}),
    revisions: [...revisions.values()].sort((a, b) => b.revision - a.revision),
    ...(hidden.length > 0 ? { hidden: [...hidden] } : {}),
  };
}

const MARK_ORDER: Mark[] = ['stable', 'active', 'preview'];

/** The header and the tree, as text. */
export function renderApp(view: AppView, colour: boolean, now = Date.now()): string {
  const rows = treeRows(view, colour, now);
  return `${summaryLines(view, colour).join('\n')}\n${table(['NAME', 'KIND', 'STATUS', 'AGE', 'INFO'], rows)}\n`;
}

/** The fields above the tree: name, phase, source, images and replica counts. */
function summaryLines(view: AppView, colour: boolean): string[] {
  const field = (name: string, value: string) => `${`${name}:`.padEnd(15)}${value}`;
  const lines: string[] = [
    field('Name', view.name),
    field('Namespace', view.namespace),
    field('Phase', showStatus(view.phase, colour)),
  ];
  if (view.message) lines.push(field('Message', view.message));
  if (view.generation !== undefined && view.observedGeneration !== view.generation) {
    lines.push(
      field(
        'Observed',
        `generation ${view.observedGeneration ?? '-'} of ${view.generation} (the operator has not caught up)`,
      ),
    );
  }
  if (view.pausedBy) lines.push(field('Paused by', view.pausedBy));
  lines.push(field('Strategy', 'BlueGreen'));
  if (view.source) lines.push(field('Source', view.source));
  if (view.build?.message) lines.push(field('Build', `${view.build.phase}: ${view.build.message}`));
  for (const run of runsOf(view)) {
    const message = run.message ? ` - ${run.message}` : '';
    lines.push(
      field(
        'Checks',
        `${RUN_NAMES[run.kind]} of revision ${run.revision}: ${showProgress(run.phase, colour)}${message}`,
      ),
    );
  }
  if (view.trafficCheck) lines.push(field('Traffic check', trafficLine(view.trafficCheck, colour)));
  const images = view.revisions
    .filter((r) => r.marks.length > 0)
    .map((r) => `${r.image} (${sortedMarks(r.marks).join(', ')})`);
  images.forEach((image, i) => {
    lines.push(i === 0 ? field('Images', image) : `${' '.repeat(15)}${image}`);
  });
  // Current counts every pod, Updated the desired revision's, Ready and Available the active one's.
  // An operator that did not count yet leaves the active ReplicaSet's own counts.
  const active = view.revisions.find((r) => r.marks.includes('active'))?.replicaSet;
  const counts: [string, number | undefined][] = [
    ['Desired', view.replicas],
    ['Current', view.current],
    ['Updated', view.updated],
    ['Ready', view.ready ?? active?.ready],
    ['Available', view.available ?? active?.available],
  ];
  lines.push('Replicas:');
  for (const [name, count] of counts) if (count !== undefined) lines.push(`  ${`${name}:`.padEnd(13)}${count}`);
  lines.push('');
  return lines;
}

/** The tree below: the App, its build Job, and each revision with its ReplicaSet, pods and checks. */
function treeRows(view: AppView, colour: boolean, now: number): string[][] {
  const ago = (t: string | undefined) => age(since(t, now));
  const rows: string[][] = [];
  const row: Row = (prefix, icon, name, kind, status, t, info) =>
    rows.push([`${prefix}${icon} ${name}`, kind, status ? showStatus(status, colour) : '', t ? ago(t) : '', info]);
  const step: Row = (prefix, icon, name, kind, status, t, info) =>
    rows.push([`${prefix}${icon} ${name}`, kind, status ? showProgress(status, colour) : '', t ? ago(t) : '', info]);
  const draw: Draw = { row, step, raw: (cells) => rows.push(cells), colour };
  row('', '⟳', view.name, 'App', view.phase, view.createdAt, '');

  const children: ((prefix: string, last: boolean) => void)[] = [];
  if (view.build) {
    const build = view.build;
    children.push((prefix, last) => {
      row(
        `${prefix}${last ? '└──' : '├──'}`,
        '⚙',
        build.job,
        'Job',
        build.phase,
        build.createdAt,
        `commit:${build.commit.slice(0, 7)}`,
      );
      const inner = `${prefix}${last ? '   ' : '│  '}`;
      build.pods.forEach((pod, i) => {
        podRow(row, `${inner}${i === build.pods.length - 1 ? '└──' : '├──'}`, pod);
      });
    });
  }
  for (const revision of view.revisions) {
    children.push((prefix, last) => revisionRows(draw, view, revision, prefix, last));
  }
  children.forEach((drawChild, i) => {
    drawChild('', i === children.length - 1);
  });
  return rows;
}

/**
 * What drawing a part of the tree needs: a row with status and age, the same
 * for a step of the checks (Running not yet a success), a row as given, and
 * whether to colour.
 */
interface Draw {
  row: Row;
  step: Row;
  raw: (cells: string[]) => void;
  colour: boolean;
}

/** A revision: its ReplicaSet with the pods, then its runs of checks. */
function revisionRows(draw: Draw, view: AppView, revision: RevisionView, prefix: string, last: boolean): void {
  const marks = sortedMarks(revision.marks).join(',');
  const shownMarks = marks ? paint(marks, 'blue', draw.colour) : '';
  const skipped = revision.checksSkipped ? 'checks skipped' : '';
  draw.raw([`${prefix}${last ? '└──' : '├──'}# revision:${revision.revision}`, '', '', '', skipped]);
  const inner = `${prefix}${last ? '   ' : '│  '}`;
  const runs = revision.analysis ?? [];
  const branch = (lastChild: boolean) => `${inner}${lastChild ? '└──' : '├──'}`;
  const rs = revision.replicaSet;
  if (!rs && revision.replicaSetName !== undefined) {
    const gone = !view.hidden?.includes('replicasets');
    const what = `${revision.replicaSetName}${gone ? ' (gone)' : ''}`.trim();
    draw.raw([`${branch(runs.length === 0)}⧉ ${what}`, 'ReplicaSet', gone ? '' : '? not allowed', '', shownMarks]);
  } else if (rs) {
    // Like kubectl argo rollouts, the marks; and the count while pods are still coming up.
    const progress = rs.status === 'Progressing' ? `${rs.available}/${rs.desired} available` : '';
    const info = [shownMarks, progress].filter(Boolean).join(' ');
    draw.row(branch(runs.length === 0), '⧉', rs.name, 'ReplicaSet', rs.status, rs.createdAt, info);
    const podPrefix = `${inner}${runs.length === 0 ? '   ' : '│  '}`;
    revision.pods.forEach((pod, i) => {
      podRow(draw.row, `${podPrefix}${i === revision.pods.length - 1 ? '└──' : '├──'}`, pod);
    });
  }
  runs.forEach((run, i) => {
    runRows(draw, run, inner, i === runs.length - 1);
  });
}

/** Measurements shown per check: the latest; -o yaml has the ten status keeps. */
const SHOWN_MEASUREMENTS = 3;

/** The traffic check in one line: where it stands, and its message (the count, the host, what answered last). */
export function trafficLine(check: TrafficCheckStatus, colour: boolean): string {
  return `revision ${check.revision}: ${showProgress(check.phase, colour)}${check.message ? ` - ${check.message}` : ''}`;
}

export const RUN_NAMES: Record<AnalysisKind, string> = {
  pre: 'pre-promotion checks',
  post: 'post-promotion checks',
};

/** A run of checks, each check under it, and each check's latest measurements under that. */
function runRows(draw: Draw, run: AnalysisRunView, prefix: string, last: boolean): void {
  const checks = run.checks ?? [];
  const total = checks.reduce(
    (sum, c) => ({
      successful: sum.successful + c.successful,
      failed: sum.failed + c.failed,
      inconclusive: sum.inconclusive + c.inconclusive,
      error: sum.error + c.error,
    }),
    { successful: 0, failed: 0, inconclusive: 0, error: 0 },
  );
  const runBranch = `${prefix}${last ? '└──' : '├──'}`;
  draw.step(runBranch, '⊞', RUN_NAMES[run.kind], 'Analysis', run.phase, run.startedAt, tally(total, draw.colour));
  const inner = `${prefix}${last ? '   ' : '│  '}`;
  checks.forEach((check, i) => {
    const lastCheck = i === checks.length - 1;
    const info = [check.provider ?? '', tally(check, draw.colour), check.message ? shorten(check.message, 80) : '']
      .filter(Boolean)
      .join(' ');
    draw.step(`${inner}${lastCheck ? '└──' : '├──'}`, '⊡', check.name, 'Check', check.phase, undefined, info);
    const shown = [...(check.measurements ?? [])].sort((a, b) => a.n - b.n).slice(-SHOWN_MEASUREMENTS);
    const under = `${inner}${lastCheck ? '   ' : '│  '}`;
    shown.forEach((m, j) => {
      const said = [
        m.value !== undefined ? `value:${shorten(m.value, 40)}` : '',
        m.message ? shorten(m.message, 60) : '',
      ]
        .filter(Boolean)
        .join(' ');
      draw.step(
        `${under}${j === shown.length - 1 ? '└──' : '├──'}`,
        '∙',
        `#${m.n}`,
        'Measurement',
        m.phase,
        m.startedAt,
        said,
      );
    });
  });
}

interface Tally {
  successful: number;
  failed: number;
  inconclusive: number;
  error: number;
}

/** Measurements by outcome, the ones that happened: ✔ 2 ✖ 1 ? 1 ⚠ 1. */
function tally(t: Tally, colour: boolean): string {
  const parts: [number, string, Colour][] = [
    [t.successful, '✔', 'green'],
    [t.failed, '✖', 'red'],
    [t.inconclusive, '?', 'yellow'],
    [t.error, '⚠', 'red'],
  ];
  return parts
    .filter(([n]) => n > 0)
    .map(([n, icon, c]) => `${paint(icon, c, colour)} ${n}`)
    .join(' ');
}

/** One line, at most `max` characters: a tree row is no place for a paragraph. */
function shorten(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

type Row = (
  prefix: string,
  icon: string,
  name: string,
  kind: string,
  status: string,
  createdAt: string | undefined,
  info: string,
) => void;

function podRow(row: Row, prefix: string, pod: PodView): void {
  row(
    prefix,
    '□',
    pod.name,
    'Pod',
    pod.status,
    pod.createdAt,
    `ready:${pod.ready}${pod.restarts > 0 ? `,restarts:${pod.restarts}` : ''}`,
  );
}

const runsOf = (view: AppView): AnalysisRunView[] =>
  view.revisions.flatMap((r) => r.analysis ?? []).sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'pre' ? -1 : 1));

const sortedMarks = (marks: readonly Mark[]): Mark[] => MARK_ORDER.filter((m) => marks.includes(m));
