// `kubectl teal lint APP [--drain DURATION]`: reads the App, the Services,
// Ingresses, IngressClasses and TargetGroupBindings around it with the user's
// credentials, and prints what the lint rules (src/rollout/lint.ts) find.
// Exits as `kubectl diff` does: 0 nothing found, 1 findings, 2 an error. A
// list the user may not read (403), or whose resource is not installed (404),
// is a note "not checked: cannot read ...", not an error.
import { parseDuration } from '../../app/duration.ts';
import { validateApp } from '../../app/validate.ts';
import { apiStatusOf } from '../../kube/errors.ts';
import { hasWarnings, LINT_RULES, type LintReport, type Listed, lint as lintApp } from '../../rollout/lint.ts';
import type { KubeObject } from '../../rollout/load-balancers.ts';
import { CliError, LINT_EXIT, UsageError } from '../errors.ts';
import { explain, type Operation } from '../explain.ts';
import type { Flags } from '../flags.ts';
import { Session } from '../kube.ts';
import { formatData, paint, useColour } from '../output.ts';

/** The TargetGroupBindings of the AWS Load Balancer Controller, at the version it serves today. */
const TGB_API = { group: 'elbv2.k8s.aws', version: 'v1beta1', plural: 'targetgroupbindings' } as const;
const NETWORKING = { group: 'networking.k8s.io', version: 'v1' } as const;

/** --drain in whole seconds, as load balancers count their delay. */
function drainSeconds(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  try {
    return Math.ceil(parseDuration(text) / 1000);
  } catch (err) {
    throw new UsageError(`--drain: ${(err as Error).message}`, 'lint');
  }
}

/** One list, or why it could not be read: refused (403) or not installed (404) only; anything else fails the command. */
async function listed(session: Session, op: Operation, request: () => Promise<unknown>): Promise<Listed> {
  try {
    const list = (await request()) as { items?: unknown };
    return { items: Array.isArray(list.items) ? (list.items as KubeObject[]) : [] };
  } catch (err) {
    const code = apiStatusOf(err)?.code;
    if (code === 404) return { unreadable: `${op.resource} is not installed in this cluster` };
    const explained = explain(err, { user: session.kubeconfigUser, ...op }, session.server);
    if (code === 403) return { unreadable: explained.message };
    throw explained;
  }
}

/** Everything lint reads around the App, in parallel. */
async function readAround(session: Session) {
  const namespace = session.namespace;
  const op = (resource: string, cluster = false): Operation => ({
    verb: 'list',
    resource,
    ...(cluster ? {} : { namespace }),
  });
  const [services, ingresses, ingressClasses, targetGroupBindings] = await Promise.all([
    listed(session, op('services'), () => session.core.listNamespacedService({ namespace })),
    listed(session, op('ingresses.networking.k8s.io'), () =>
      session.custom.listNamespacedCustomObject({ ...NETWORKING, plural: 'ingresses', namespace }),
    ),
    listed(session, op('ingressclasses.networking.k8s.io', true), () =>
      session.custom.listClusterCustomObject({ ...NETWORKING, plural: 'ingressclasses' }),
    ),
    listed(session, op(`${TGB_API.plural}.${TGB_API.group}`), () =>
      session.custom.listNamespacedCustomObject({ ...TGB_API, namespace }),
    ),
  ]);
  return { services, ingresses, ingressClasses, targetGroupBindings };
}

export async function lint(args: string[], flags: Flags): Promise<number> {
  const [name = ''] = args;
  const drain = drainSeconds(flags.drain);
  const session = new Session(flags);
  const raw = await session.getApp(name);
  // The spec as the operator reads it, with its defaults (the active Service's name among them); status does not matter.
  const parsed = validateApp({ apiVersion: raw.apiVersion, kind: raw.kind, metadata: raw.metadata, spec: raw.spec });
  if (!parsed.ok) throw new CliError(`App "${name}" cannot be read: ${parsed.errors.join('; ')}`);
  const report = lintApp({ app: parsed.app, ...(await readAround(session)), drainSeconds: drain });
  const code = hasWarnings(report) ? LINT_EXIT.findings : LINT_EXIT.clean;
  if (flags.output) {
    process.stdout.write(formatData({ name, namespace: session.namespace, exitCode: code, ...report }, flags.output));
  } else {
    process.stdout.write(renderReport(name, session.namespace, report, useColour()));
  }
  return code;
}

/** The longest rule id, so the objects line up. */
const RULE_WIDTH = Math.max(...Object.values(LINT_RULES).map((id) => id.length));

/** The findings as a list, each its severity, rule and object, then its message and fix, and a summary line. */
export function renderReport(name: string, namespace: string, report: LintReport, colour: boolean): string {
  const lines: string[] = [];
  const drain = report.drain
    ? `${report.drain.seconds}s (${report.drain.source})`
    : 'none found (no pod-aware load balancer with a known drain targets the App; --drain gives one)';
  lines.push(`App "${name}" in namespace "${namespace}"`, `Drain: ${drain}`, '');
  for (const f of report.findings) {
    const severity = paint(f.severity.padEnd(7), f.severity === 'warning' ? 'yellow' : 'grey', colour);
    lines.push(`${severity}  ${f.rule.padEnd(RULE_WIDTH)}  ${f.object}${f.field ? `  ${f.field}` : ''}`);
    lines.push(`  ${f.message}`);
    if (f.fix) lines.push(`  fix: ${f.fix}`);
    lines.push('');
  }
  const warnings = report.findings.filter((f) => f.severity === 'warning').length;
  const notes = report.findings.length - warnings;
  const count = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  lines.push(warnings + notes === 0 ? 'No findings.' : `${count(warnings, 'warning')}, ${count(notes, 'note')}.`);
  return `${lines.join('\n')}\n`;
}
