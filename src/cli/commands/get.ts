// `kubectl teal get APP [--watch]`: the tree, once or redrawn on every change.
// A single draw reads through rest.ts when it can (no client-node to load);
// --watch, and a kubeconfig rest.ts leaves to client-node, use kube.ts's Session.
import { LABEL_APP } from '../../app/labels.ts';
import type { AppReader } from '../app-object.ts';
import { CliError, EXIT } from '../errors.ts';
import type { Flags } from '../flags.ts';
import type { Session } from '../kube.ts';
import { formatData, useColour } from '../output.ts';
import { restReader } from '../rest.ts';
import { type AppView, appView, renderApp } from '../tree.ts';

/** Kinds the user may not list (403), with the refusal: left out of the tree rather than failing it. */
type Hidden = Map<(typeof KINDS)[number], string>;
const KINDS = ['replicasets', 'pods', 'jobs'] as const;

export async function loadView(session: AppReader, name: string, hidden: Hidden = new Map()): Promise<AppView> {
  const app = await session.getApp(name);
  // A user with only the teal-viewer role may read Apps but not the workloads: show what is allowed.
  const optional = async <T>(kind: 'replicasets' | 'pods' | 'jobs', list: () => Promise<T[]>): Promise<T[]> => {
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
  const [replicaSets, pods, jobs] = await Promise.all([
    optional('replicasets', () => session.replicaSets(app)),
    optional('pods', () => session.pods(app)),
    optional('jobs', () => session.jobs(app)),
  ]);
  // In the order of the tree, whichever refusal came first.
  const refused = KINDS.filter((kind) => hidden.has(kind));
  return appView(app, replicaSets, pods, jobs, refused);
}

export async function get(args: string[], flags: Flags): Promise<number> {
  const [name = ''] = args;
  const show = (view: AppView) => (flags.output ? formatData(view, flags.output) : renderApp(view, useColour()));
  const fast = flags.watch ? undefined : await restReader(flags);
  if (fast) {
    try {
      process.stdout.write(show(await loadView(fast, name)));
    } finally {
      fast.close();
    }
    return EXIT.ok;
  }
  const { Session } = await import('../kube.ts');
  const session = new Session(flags);
  if (!flags.watch) {
    process.stdout.write(show(await loadView(session, name)));
    return EXIT.ok;
  }
  return watchApp(session, name, show);
}

/**
 * Watches the App and its ReplicaSets, pods and Jobs, and draws again after
 * each burst of changes (and every few seconds, for the ages). Runs until
 * Ctrl-C, or until a watch is refused.
 */
async function watchApp(session: Session, name: string, show: (view: AppView) => string): Promise<number> {
  const { oneAtATime, paths } = await import('../kube.ts');
  // The first draw fails fast on a missing App or a refusal.
  const hidden: Hidden = new Map();
  let last = show(await loadView(session, name, hidden));
  const tty = process.stdout.isTTY === true;
  const draw = (text: string) => process.stdout.write(tty ? `\x1b[H\x1b[2J${text}` : `${text}\n`);
  draw(last);

  return new Promise<number>((resolve) => {
    let pending: NodeJS.Timeout | undefined;
    const redraw = oneAtATime(async () => {
      try {
        const text = show(await loadView(session, name, hidden));
        // Without a terminal each change is printed once; unchanged views are skipped.
        if (text !== last) draw(text);
        last = text;
      } catch (err) {
        process.stderr.write(`error: ${(err as Error).message}\n`);
      }
    });
    const changed = () => {
      clearTimeout(pending);
      // Changes come in bursts (a scale-up touches the ReplicaSet and every pod): draw once per burst.
      pending = setTimeout(redraw, 150);
    };
    const ns = session.namespace;
    const selector = { labelSelector: `${LABEL_APP}=${name}` };
    const stops: (() => void)[] = [];
    const finish = (code: number) => {
      for (const stop of stops) stop();
      clearTimeout(pending);
      clearInterval(ticker);
      process.off('SIGINT', interrupted);
      resolve(code);
    };
    const refused = (err: CliError) => {
      process.stderr.write(`error: ${err.message}\n`);
      finish(EXIT.error);
    };
    const interrupted = () => finish(EXIT.ok);
    process.once('SIGINT', interrupted);
    const ticker = setInterval(redraw, tty ? 5_000 : 30_000);
    stops.push(session.watchApp(name, changed, refused));
    const workloads = [
      { kind: 'replicasets', path: paths.replicaSets(ns), resource: 'replicasets.apps' },
      { kind: 'pods', path: paths.pods(ns), resource: 'pods' },
      { kind: 'jobs', path: paths.jobs(ns), resource: 'jobs.batch' },
    ] as const;
    for (const { kind, path, resource } of workloads) {
      if (hidden.has(kind)) continue;
      // Only the App's own watch is essential; without another, the periodic redraw still catches up.
      const degrade = (err: CliError) => process.stderr.write(`warning: ${err.message}: redrawing every few seconds\n`);
      stops.push(session.watch(path, selector, changed, degrade, { verb: 'watch', resource, namespace: ns }));
    }
  });
}
