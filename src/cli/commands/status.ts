// `kubectl teal status APP`: waits until the App settles, then exits with a
// code scripts can use: 0 Healthy, 1 Degraded, 2 Paused, 3 timeout.
import { parseDuration } from '../../app/duration.ts';
import { readIntents } from '../../app/intents.ts';
import type { AnalysisKind, AppAnalysisRun } from '../../app/schema.ts';
import { CliError, EXIT, UsageError } from '../errors.ts';
import type { Flags } from '../flags.ts';
import { type AppObject, oneAtATime, Session } from '../kube.ts';
import { formatData, showProgress, showStatus, useColour } from '../output.ts';
import { RUN_NAMES, trafficLine } from '../tree.ts';

const DEFAULT_TIMEOUT = '5m';

/** Actions recorded on the App that the operator has not carried out yet. */
function pendingIntents(app: AppObject): string[] {
  const handled = app.status?.handledIntents ?? {};
  return readIntents(app.metadata.annotations)
    .intents.filter((i) => handled[i.action] !== i.id)
    .map((i) => i.action);
}

/** The run of checks started last, pre- or post-promotion, with which it is. */
function latestRun(app: AppObject): (AppAnalysisRun & { kind: AnalysisKind }) | undefined {
  const { prePromotionAnalysis: pre, postPromotionAnalysis: post } = app.status ?? {};
  if (pre && post) return post.startedAt >= pre.startedAt ? { ...post, kind: 'post' } : { ...pre, kind: 'pre' };
  if (post) return { ...post, kind: 'post' };
  return pre ? { ...pre, kind: 'pre' } : undefined;
}

/**
 * Settled: the operator has seen the current spec (observedGeneration) and
 * every action recorded so far, and the phase is one that waits for a person
 * or is final until something changes. Paused while checks still run is not
 * waiting for a person yet (unless one paused it): their result decides.
 */
export function settled(app: AppObject): 'Healthy' | 'Paused' | 'Degraded' | undefined {
  const status = app.status;
  if (!status?.phase || status.observedGeneration !== app.metadata.generation) return undefined;
  if (pendingIntents(app).length > 0) return undefined;
  if (status.phase === 'Paused' && latestRun(app)?.phase === 'Running' && !status.pause && !app.spec.paused) {
    return undefined;
  }
  if (status.phase === 'Healthy' || status.phase === 'Paused' || status.phase === 'Degraded') return status.phase;
  return undefined;
}

const CODES = { Healthy: EXIT.ok, Degraded: EXIT.error, Paused: EXIT.paused } as const;

export async function status(args: string[], flags: Flags): Promise<number> {
  const [name = ''] = args;
  const timeoutMs = timeoutOf(flags);
  const session = new Session(flags);
  const say = changedLines(flags.output === undefined, useColour());
  const report = (app: AppObject, result: string, code: number) => {
    process.stdout.write(outcomeText(app, name, result, code, flags));
    return code;
  };
  const app = await session.getApp(name);
  say(app);
  const now = settled(app);
  if (now) return report(app, now, CODES[now]);
  return untilSettled(session, name, app, timeoutMs, say, report);
}

function timeoutOf(flags: Flags): number {
  try {
    return parseDuration(flags.timeout ?? DEFAULT_TIMEOUT);
  } catch (err) {
    throw new UsageError(`--timeout: ${(err as Error).message}`, 'status');
  }
}

/**
 * What `status` says of each state of the App it sees, without -o: the checks,
 * traffic check and notifications lines and the status line, each only when it
 * changed since it was last said.
 */
function changedLines(human: boolean, colour: boolean): (app: AppObject) => void {
  const said = new Map<string, string>();
  const lines: [string, (app: AppObject) => string][] = [
    ['checks', (app) => checksLine(app, colour)],
    ['traffic', (app) => trafficCheckLine(app, colour)],
    ['notifications', notificationsLine],
  ];
  return (app) => {
    for (const [kind, lineOf] of lines) {
      const line = lineOf(app);
      if (human && line !== said.get(kind) && line !== '') process.stdout.write(`${line}\n`);
      said.set(kind, line);
    }
    const line = statusLine(app, colour);
    if (human && line !== said.get('status')) process.stdout.write(`${line}\n`);
    said.set('status', line);
  };
}

/** Follows the App (a watch, and a read every 5 s should an event be missed) until it settles or the time is up. */
function untilSettled(
  session: Session,
  name: string,
  first: AppObject,
  timeoutMs: number,
  say: (app: AppObject) => void,
  report: (app: AppObject, result: string, code: number) => number,
): Promise<number> {
  let app = first;
  return new Promise<number>((resolve, reject) => {
    const finish = (outcome: number | CliError) => {
      stop();
      clearTimeout(deadline);
      clearInterval(poll);
      if (typeof outcome === 'number') resolve(outcome);
      else reject(outcome);
    };
    const check = oneAtATime(async () => {
      try {
        app = await session.getApp(name);
        say(app);
        const result = settled(app);
        if (result) finish(report(app, result, CODES[result]));
      } catch (err) {
        if (err instanceof CliError) finish(err);
      }
    });
    const stop = session.watchApp(name, check, (err) => finish(err));
    const poll = setInterval(check, 5_000);
    const deadline =
      timeoutMs > 0 ? setTimeout(() => finish(report(app, 'timeout', EXIT.timeout)), timeoutMs) : undefined;
  });
}

/** The one line `status` prints for each new state of the App. */
function statusLine(app: AppObject, colour: boolean): string {
  const phase = app.status?.phase ?? 'Unknown';
  const pending = pendingIntents(app);
  const paused = app.status?.pause ? ` (paused by ${app.status.pause.by})` : '';
  const waiting = pending.length > 0 ? ` (waiting for the operator to carry out: ${pending.join(', ')})` : '';
  return `${showStatus(phase, colour)}${app.status?.message ? ` - ${app.status.message}` : ''}${paused}${waiting}`;
}

/**
 * The line `status` prints about notifications, only when one waits or the
 * latest failed: how many are pending, and the failure or retry as the
 * NotificationsDelivered condition says it (never a URL).
 */
export function notificationsLine(app: AppObject): string {
  const pending = app.status?.notifications?.pending?.length ?? 0;
  const condition = app.status?.conditions?.find((c) => c.type === 'NotificationsDelivered');
  const trouble = condition?.status === 'False' ? `${condition.reason}: ${condition.message ?? ''}` : '';
  if (pending === 0 && trouble === '') return '';
  const waiting = pending > 0 ? `${pending} pending` : '';
  return `notifications: ${[waiting, trouble].filter((s) => s !== '').join('; ')}`;
}

/** The line `status` prints about the traffic check of the revision active now, when it has one. */
export function trafficCheckLine(app: AppObject, colour: boolean): string {
  const check = app.status?.trafficCheck;
  if (!check || check.podTemplateHash !== app.status?.active?.podTemplateHash) return '';
  return `traffic check: ${trafficLine(check, colour)}`;
}

/** The line `status` prints about the checks, when a run of them exists: which, of what, where it stands. */
export function checksLine(app: AppObject, colour: boolean): string {
  const run = latestRun(app);
  // Only about the release at hand: not a run of a revision left behind by an undo or a newer one.
  const { preview, active, abort } = app.status ?? {};
  if (!run || ![preview?.revision, active?.revision, abort?.revision].includes(run.revision)) return '';
  const message = run.message ? ` - ${run.message}` : '';
  return `checks: ${RUN_NAMES[run.kind]} of revision ${run.revision}: ${showProgress(run.phase, colour)}${message}`;
}

/** Why a Paused App waits, in a sentence, with the command that carries on. */
export function pausedWhy(app: AppObject, name: string): string {
  const pause = app.status?.pause;
  const preview = app.status?.preview;
  if (pause) return `: paused by ${pause.by}; "kubectl teal resume ${name}" carries on`;
  if (!preview) return '';
  const run = app.status?.prePromotionAnalysis;
  const checked = run && (run.podTemplateHash === preview.podTemplateHash || run.revision === preview.revision);
  if (checked && (run.phase === 'Inconclusive' || run.phase === 'Cancelled')) {
    const how = run.phase === 'Inconclusive' ? 'were inconclusive' : 'were cancelled';
    return `: the pre-promotion checks of revision ${preview.revision} ${how}; "kubectl teal retry ${name}" runs them again, "kubectl teal promote ${name} --skip-checks" promotes without them`;
  }
  return `: revision ${preview.revision} waits for "kubectl teal promote ${name}"`;
}

/** What `status` prints once the App settled or the wait timed out: the data with -o, else a sentence when there is one. */
function outcomeText(app: AppObject, name: string, result: string, code: number, flags: Flags): string {
  if (flags.output) {
    return formatData(
      {
        name: app.metadata.name,
        namespace: app.metadata.namespace,
        result,
        exitCode: code,
        phase: app.status?.phase,
        message: app.status?.message,
        generation: app.metadata.generation,
        observedGeneration: app.status?.observedGeneration,
        active: app.status?.active?.revision,
        preview: app.status?.preview?.revision,
        conditions: app.status?.conditions ?? [],
        ...analysisOf(app),
        ...(app.status?.trafficCheck ? { trafficCheck: app.status.trafficCheck } : {}),
      },
      flags.output,
    );
  }
  if (result === 'Paused') return `App "${name}" is Paused${pausedWhy(app, name)}\n`;
  if (result === 'timeout') {
    return `timed out after ${flags.timeout ?? DEFAULT_TIMEOUT} waiting for App "${name}" to settle\n`;
  }
  return '';
}

/** The runs of checks, as the HTTP API names them; nothing when there are none, so -o stays as it was. */
function analysisOf(app: AppObject): { analysis?: { prePromotion?: AppAnalysisRun; postPromotion?: AppAnalysisRun } } {
  const { prePromotionAnalysis: pre, postPromotionAnalysis: post } = app.status ?? {};
  if (!pre && !post) return {};
  return { analysis: { ...(pre ? { prePromotion: pre } : {}), ...(post ? { postPromotion: post } : {}) } };
}
