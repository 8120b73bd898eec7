// promote, abort, retry, undo, pause, resume and restart. Each is recorded as an
// intent annotation with a JSON merge patch; the operator carries it out
// once. The rules the operator applies (actionVerdict) are asked first, over
// the App's status and ReplicaSets, so a request that the operator would only
// ignore or refuse fails here with the reason (the operator checks again: the
// App may change in between).
import { randomUUID } from 'node:crypto';
import { type Action, type ActionArgs, encodeIntent, givenArgs, intentAnnotation } from '../../app/intents.ts';
import {
  type Allowed,
  actionVerdict,
  type ChecksView,
  type Refused,
  UNKNOWN,
  type Unknown,
  viewOfApp,
} from '../../rollout/action-rules.ts';
import { type ObservedReplicaSet, observeReplicaSet } from '../../rollout/observed.ts';
import { CliError, EXIT } from '../errors.ts';
import type { Flags } from '../flags.ts';
import { type AppObject, Session } from '../kube.ts';

const label = (app: AppObject) => `App "${app.metadata.name}"`;

/** A refusal in the CLI's words, with what to do next where there is something. */
function refusal(app: AppObject, action: Action, refused: Refused): CliError {
  const status = app.status ?? {};
  const name = app.metadata.name;
  const phase = status.phase ?? 'unknown';
  switch (refused.code) {
    case 'deleting':
      return new CliError(`${label(app)} is being deleted`);
    case 'nothing-in-flight': {
      if (action === 'abort') {
        return new CliError(`${label(app)} has nothing in progress to abort (phase ${phase})`);
      }
      const active = status.active ? `revision ${status.active.revision} is active` : 'nothing is active yet';
      return new CliError(`${label(app)} has no revision in preview to promote (phase ${phase}; ${active})`);
    }
    case 'not-in-preview':
      return new CliError(
        `revision ${refused.revision} is not in preview: ${label(app)} has revision ${refused.inFlight} in preview; nothing changed`,
      );
    case 'aborted':
      return new CliError(`revision ${refused.revision} was aborted: run "kubectl teal retry ${name}" first`);
    case 'already-aborted':
      return new CliError(`revision ${refused.revision} of ${label(app)} is aborted already`);
    case 'nothing-aborted':
      return new CliError(`${label(app)} has nothing aborted to retry`);
    case 'no-earlier-revision':
      return new CliError(`${label(app)} has no earlier revision to return to`);
    case 'no-replicaset':
      return new CliError(
        `revision ${refused.revision} of ${label(app)} has no ReplicaSet left (see revisionHistoryLimit)`,
      );
    case 'already-active':
      return new CliError(`revision ${refused.revision} is already active in ${label(app)}`);
    case 'checks-not-passed':
      return new CliError(checksRefusal(app, refused));
    case 'paused-by-spec':
      return new CliError(
        `${label(app)} is paused by spec.paused: set it to false (kubectl patch apps.teal.dev ${name} --type merge -p '{"spec":{"paused":false}}')`,
      );
    case 'nothing-active':
      return new CliError(`${label(app)} has no active revision to restart (phase ${phase})`);
    case 'already-restarting':
      return new CliError(`${label(app)}: ${refused.reason}; "kubectl teal status ${name}" waits for it to finish`);
    case 'release-in-progress':
      return new CliError(
        `${label(app)} cannot be restarted while a release is in progress: ${refused.reason}; see "kubectl teal get ${name}"`,
      );
  }
}

const CHECKS_STATE: Record<ChecksView['phase'], string> = {
  NotStarted: 'have not started yet (they start once the preview is available)',
  Running: 'are still running',
  Successful: 'passed',
  Failed: 'failed',
  Error: 'could not be measured',
  Inconclusive: 'were inconclusive',
  Cancelled: 'were cancelled',
};

/**
 * A promotion refused because the checks have not passed: where they stand,
 * where to see them, and the ways forward. The rules' own reason is the
 * fallback when the status does not say which checks these are.
 */
function checksRefusal(app: AppObject, refused: Refused): string {
  const name = app.metadata.name;
  const checks = viewOfApp(app, UNKNOWN).checks;
  const see = `see them with "kubectl teal get ${name}"`;
  const skip = `"kubectl teal promote ${name} --skip-checks" promotes without them (recorded in history)`;
  if (checks === UNKNOWN || checks === undefined) return `${label(app)} cannot be promoted: ${refused.reason}; ${see}`;
  const which = checks.stage === 'pre' ? 'pre-promotion' : 'post-promotion';
  const detail = checks.message ? ` (${checks.message})` : '';
  const again =
    checks.phase === 'Inconclusive' || checks.phase === 'Cancelled'
      ? `; "kubectl teal retry ${name}" runs them again`
      : '';
  return `${label(app)} cannot be promoted yet: the ${which} checks of revision ${checks.revision.revision} ${CHECKS_STATE[checks.phase]}${detail}; ${see}${again}; ${skip}`;
}

/** What the CLI says it asked for. */
function requested(action: Action, allowed: Allowed, flags: Flags): string {
  const of = allowed.revision !== undefined ? ` of revision ${allowed.revision}` : '';
  switch (action) {
    case 'promote': {
      const how = [flags.full ? 'full' : '', flags.skipChecks ? 'checks skipped' : ''].filter(Boolean).join(', ');
      return `promotion${of}${how ? ` (${how})` : ''} requested`;
    }
    case 'abort':
      return `abort${of} requested`;
    case 'retry':
      return `retry${of} requested`;
    case 'undo': {
      if (allowed.returnsToActive) {
        return `undo to revision ${allowed.revision} requested: revision ${allowed.drops} leaves preview, revision ${allowed.revision} stays active`;
      }
      const to = allowed.revision !== undefined ? ` to revision ${allowed.revision}` : '';
      return `undo${to}${flags.preview ? ' as a preview' : ''} requested`;
    }
    case 'pause':
      return allowed.note === 'already-paused' ? 'already paused; pause recorded again' : 'pause requested';
    case 'resume':
      return allowed.note === 'stays-paused-by-spec'
        ? 'resume requested, but spec.paused is true: the App stays paused until it is false'
        : allowed.note === 'not-paused'
          ? 'resume requested (it was not paused)'
          : 'resume requested';
    case 'restart':
      return `restart${of} requested: its pods are replaced a few at a time`;
  }
}

/**
 * What the action will ask for, or a CliError saying why it would not happen.
 * replicaSets: the App's, or unknown when the action does not depend on them.
 */
export function decide(
  action: Action,
  app: AppObject,
  flags: Flags,
  replicaSets: readonly ObservedReplicaSet[] | Unknown,
): { extra: ActionArgs; done: string } {
  const verdict = actionVerdict(action, flags, viewOfApp(app, replicaSets));
  if (!verdict.allowed) {
    const error = refusal(app, action, verdict);
    if (verdict.code !== 'no-replicaset' || replicaSets === UNKNOWN) throw error;
    const kept = replicaSets.map((r) => r.revision).sort((a, b) => a - b);
    throw new CliError(`${error.message}; revisions kept: ${kept.join(', ') || 'none'}`);
  }
  // As with the HTTP API, the arguments travel with the intent: the operator decides again on them.
  return { extra: givenArgs(action, flags), done: requested(action, verdict, flags) };
}

/** decide, with the App's ReplicaSets listed when the action depends on them (undo). */
async function check(
  session: Session,
  action: Action,
  app: AppObject,
  flags: Flags,
): Promise<{ extra: ActionArgs; done: string }> {
  const replicaSets =
    action === 'undo'
      ? (await session.replicaSets(app))
          .map((rs) => observeReplicaSet(rs))
          .filter((rs): rs is ObservedReplicaSet => rs !== undefined)
      : UNKNOWN;
  return decide(action, app, flags, replicaSets);
}

const GRANT = 'grant the teal-promoter role';

export function actionCommand(action: Action) {
  return async (args: string[], flags: Flags): Promise<number> => {
    const [name = ''] = args;
    const session = new Session(flags);
    const app = await session.getApp(name, action);
    const [by, allowed] = await Promise.all([session.whoami(), session.canI(action, name)]);
    // The action verb, as the HTTP API checks it, so `kubectl auth can-i promote apps.teal.dev` holds for both.
    if (allowed === false) {
      throw new CliError(
        `user "${by}" cannot ${action} apps.teal.dev "${name}" in namespace "${session.namespace}" (RBAC: ${GRANT}, or the "${action}" verb on apps.teal.dev)`,
      );
    }
    const { extra, done } = await check(session, action, app, flags);
    const at = new Date().toISOString();
    const encoded = encodeIntent(action, { id: randomUUID(), by: by.slice(0, 256), via: 'cli', at, ...extra });
    // The flags were checked against the same declaration: a failure here is a bug, not the user's.
    if (!encoded.ok) throw new Error(`the ${action} intent would not be read back: ${encoded.problem}`);
    const { intent } = encoded;
    await session.patchApp(
      app,
      { metadata: { annotations: { [intentAnnotation(action)]: encoded.value } } },
      action,
      `the plugin records actions with a patch of the App: ${GRANT}, or "patch" on apps.teal.dev`,
    );
    process.stdout.write(`app "${name}" ${done} (by ${intent.by}, id ${intent.id})\n`);
    return EXIT.ok;
  };
}
