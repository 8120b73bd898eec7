// `kubectl teal list`: the printer columns of `kubectl get apps.teal.dev -o wide`
// but the message.
import { EXIT } from '../errors.ts';
import type { Flags } from '../flags.ts';
import { type AppObject, Session, since } from '../kube.ts';
import { age, formatData, paint, statusIcon, table, useColour } from '../output.ts';

export async function list(_args: string[], flags: Flags): Promise<number> {
  const session = new Session(flags);
  const apps = await session.listApps(flags.allNamespaces);
  apps.sort(
    (a, b) =>
      a.metadata.namespace.localeCompare(b.metadata.namespace) || a.metadata.name.localeCompare(b.metadata.name),
  );
  if (flags.output) {
    process.stdout.write(formatData({ apiVersion: 'v1', kind: 'List', items: apps }, flags.output));
    return EXIT.ok;
  }
  if (apps.length === 0) {
    process.stderr.write(
      flags.allNamespaces ? 'No Apps found.\n' : `No Apps found in namespace "${session.namespace}".\n`,
    );
    return EXIT.ok;
  }
  const colour = useColour();
  const now = Date.now();
  const rows = apps.map((app) => [
    ...(flags.allNamespaces ? [app.metadata.namespace] : []),
    app.metadata.name,
    phaseCell(app, colour),
    String(app.status?.active?.revision ?? '-'),
    String(app.status?.preview?.revision ?? '-'),
    app.status?.source?.shortCommit ?? app.status?.active?.commit?.slice(0, 7) ?? '-',
    ...counts(app),
    age(since(app.metadata.creationTimestamp, now)),
  ]);
  const header = [
    ...(flags.allNamespaces ? ['NAMESPACE'] : []),
    'NAME',
    'PHASE',
    'ACTIVE',
    'PREVIEW',
    'COMMIT',
    'DESIRED',
    'CURRENT',
    'UP-TO-DATE',
    'AVAILABLE',
    'AGE',
  ];
  process.stdout.write(`${table(header, rows)}\n`);
  return EXIT.ok;
}

function phaseCell(app: AppObject, colour: boolean): string {
  const phase = app.status?.phase;
  if (!phase) return '-';
  return paint(phase, statusIcon(phase).colour, colour);
}

/** The counts of a Deployment or an Argo Rollout: desired (spec), then the status counts. */
function counts(app: AppObject): string[] {
  const s = app.status;
  const show = (n: number | undefined) => (n === undefined ? '-' : String(n));
  return [show(app.spec.replicas), show(s?.replicas), show(s?.updatedReplicas), show(s?.availableReplicas)];
}
