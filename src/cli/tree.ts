// `kubectl teal get`: the App as a tree, in the layout of
// `kubectl argo rollouts get rollout`. The view is built first (also what
// -o json|yaml prints), then rendered.
import type { V1Job, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { ANN_COMMIT, ANN_IMAGE, ANN_REVISION, LABEL_HASH } from '../rollout/labels.ts';
import type { AppObject } from './kube.ts';
import { since } from './kube.ts';
import { age, paint, showStatus, table } from './output.ts';

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
}

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
  revisions: RevisionView[];
  /** Kinds the user may not list, so left out: replicasets, pods, jobs. */
  hidden?: string[];
}

const iso = (t: string | Date | undefined): string | undefined => (t instanceof Date ? t.toISOString() : t);

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

/** The tree below: the App, its build Job, and each revision with its ReplicaSet and pods. */
function treeRows(view: AppView, colour: boolean, now: number): string[][] {
  const ago = (t: string | undefined) => age(since(t, now));
  const rows: string[][] = [];
  const row: Row = (prefix, icon, name, kind, status, t, info) =>
    rows.push([`${prefix}${icon} ${name}`, kind, status ? showStatus(status, colour) : '', t ? ago(t) : '', info]);
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
    children.push((prefix, last) => {
      const marks = sortedMarks(revision.marks).join(',');
      const shownMarks = marks ? paint(marks, 'blue', colour) : '';
      rows.push([`${prefix}${last ? '└──' : '├──'}# revision:${revision.revision}`, '', '', '', '']);
      const inner = `${prefix}${last ? '   ' : '│  '}`;
      const rs = revision.replicaSet;
      if (!rs) {
        const gone = !view.hidden?.includes('replicasets');
        const what = `${revision.replicaSetName ?? ''}${gone ? ' (gone)' : ''}`.trim();
        rows.push([`${inner}└──⧉ ${what}`, 'ReplicaSet', gone ? '' : '? not allowed', '', shownMarks]);
        return;
      }
      // Like kubectl argo rollouts, the marks; and the count while pods are still coming up.
      const progress = rs.status === 'Progressing' ? `${rs.available}/${rs.desired} available` : '';
      row(
        `${inner}└──`,
        '⧉',
        rs.name,
        'ReplicaSet',
        rs.status,
        rs.createdAt,
        [shownMarks, progress].filter(Boolean).join(' '),
      );
      const podPrefix = `${inner}   `;
      revision.pods.forEach((pod, i) => {
        podRow(row, `${podPrefix}${i === revision.pods.length - 1 ? '└──' : '├──'}`, pod);
      });
    });
  }
  children.forEach((draw, i) => {
    draw('', i === children.length - 1);
  });
  return rows;
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

const sortedMarks = (marks: readonly Mark[]): Mark[] => MARK_ORDER.filter((m) => marks.includes(m));
