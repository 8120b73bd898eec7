// `kubectl teal get APP [--watch]`: the tree, once or redrawn on every change.
// A single draw reads through rest.ts when it can (no client-node to load);
// --watch, and a kubeconfig rest.ts leaves to client-node, use kube.ts's Session.
import { LABEL_APP } from '../../app/labels.ts';
import { type AppObject, type AppReader, buildJobsQuery } from '../app-object.ts';
import { drawOnceOrWatch, redrawOnChange } from '../draw.ts';
import { CliError } from '../errors.ts';
import type { Flags } from '../flags.ts';
import type { paths as kubePaths, Session } from '../kube.ts';
import { formatData, useColour } from '../output.ts';
import { type AppView, appView, renderApp } from '../tree.ts';

/** Kinds the user may not list (403), with the refusal: left out of the tree rather than failing it. */
type Hidden = Map<(typeof KINDS)[number], string>;
const KINDS = ['replicasets', 'pods', 'jobs', 'build pods'] as const;

export async function loadView(session: AppReader, name: string, hidden: Hidden = new Map()): Promise<AppView> {
  return (await loadApp(session, name, hidden)).view;
}

/** The App as read, and its tree: --watch needs the App too, to know where its build Jobs are. */
async function loadApp(session: AppReader, name: string, hidden: Hidden): Promise<{ app: AppObject; view: AppView }> {
  const app = await session.getApp(name);
  // A user with only the teal-viewer role may read Apps but not the workloads: show what is allowed.
  const optional = async <T>(kind: (typeof KINDS)[number], list: () => Promise<T[]>): Promise<T[]> => {
    if (hidden.has(kind)) return [];
    try {
      return await list();
    } catch (err) {
      if (!(err instanceof CliError) || err.httpStatus !== 403) throw err;
      hidden.set(kind, err.message);
      process.stderr.write(`warning: ${err.message}: the tree leaves them out\n`);
      return [];
    }
  };
  const [replicaSets, pods, jobs, buildPods] = await Promise.all([
    optional('replicasets', () => session.replicaSets(app)),
    optional('pods', () => session.pods(app)),
    optional('jobs', () => session.jobs(app)),
    // Apart from the App's pods: a reader may list pods in the App's namespace and not in the build namespace.
    optional('build pods', () => session.buildPods(app)),
  ]);
  // In the order of the tree, whichever refusal came first.
  const refused = KINDS.filter((kind) => hidden.has(kind));
  return { app, view: appView(app, replicaSets, [...pods, ...buildPods], jobs, refused) };
}

export async function get(args: string[], flags: Flags): Promise<number> {
  const [name = ''] = args;
  const show = (view: AppView) => (flags.output ? formatData(view, flags.output) : renderApp(view, useColour()));
  return drawOnceOrWatch(
    flags,
    (reader) => loadView(reader, name),
    show,
    (session) => watchApp(session, name, show),
  );
}

/**
 * Watches the App and its ReplicaSets, pods and Jobs, and draws again after
 * each burst of changes (redrawOnChange). Only the App's own watch is
 * essential; without another, the periodic redraw still catches up.
 */
async function watchApp(session: Session, name: string, show: (view: AppView) => string): Promise<number> {
  const { paths } = await import('../kube.ts');
  const hidden: Hidden = new Map();
  return redrawOnChange(
    () => loadApp(session, name, hidden),
    ({ view }) => show(view),
    ({ changed, refused, degrade }, first) => {
      const builds = followBuilds(session, paths, changed, degrade, hidden);
      const stops = [
        session.watchApp(name, changed, refused),
        ...watchWorkloads(session, name, paths, changed, degrade, hidden),
      ];
      builds.follow(first.app);
      return {
        // The build watches move with the App's status (followBuilds).
        loaded: ({ app }) => builds.follow(app),
        stop: () => {
          for (const stop of stops) stop();
          builds.stop();
        },
      };
    },
  );
}

/** Watches on the App's ReplicaSets and pods in its namespace, but those the user may not list. */
function watchWorkloads(
  session: Session,
  name: string,
  paths: Pick<typeof kubePaths, 'replicaSets' | 'pods'>,
  changed: () => void,
  degrade: (err: CliError) => void,
  hidden: Hidden,
): (() => void)[] {
  const ns = session.namespace;
  const selector = { labelSelector: `${LABEL_APP}=${name}` };
  const workloads = [
    { kind: 'replicasets', path: paths.replicaSets(ns), resource: 'replicasets.apps' },
    { kind: 'pods', path: paths.pods(ns), resource: 'pods' },
  ] as const;
  return workloads
    .filter(({ kind }) => !hidden.has(kind))
    .map(({ path, resource }) =>
      session.watch(path, selector, changed, degrade, { verb: 'watch', resource, namespace: ns }),
    );
}

/**
 * The watches on the App's builds, wherever buildJobsQuery says they are: with
 * --build-namespace its Jobs and their pods are in another namespace, which the
 * App's status names only once it built there, so the watches move when that changes.
 */
function followBuilds(
  session: Session,
  paths: Pick<typeof kubePaths, 'jobs' | 'pods'>,
  changed: () => void,
  degrade: (err: CliError) => void,
  hidden: Hidden,
): { follow: (app: AppObject) => void; stop: () => void } {
  let current: { key: string; stops: (() => void)[] } | undefined;
  const stop = () => {
    for (const s of current?.stops ?? []) s();
    current = undefined;
  };
  const follow = (app: AppObject) => {
    const { namespace, labelSelector } = buildJobsQuery(app, session.namespace);
    const key = `${namespace}\n${labelSelector}`;
    if (current?.key === key) return;
    stop();
    const watch = (kind: 'jobs' | 'pods', resource: string) =>
      session.watch(paths[kind](namespace), { labelSelector }, changed, degrade, {
        verb: 'watch',
        resource,
        namespace,
      });
    const stops: (() => void)[] = [];
    if (!hidden.has('jobs')) stops.push(watch('jobs', 'jobs.batch'));
    // The App's own namespace has its pods watched already (watchApp).
    if (!hidden.has('build pods') && namespace !== session.namespace) stops.push(watch('pods', 'pods'));
    current = { key, stops };
  };
  return { follow, stop };
}
