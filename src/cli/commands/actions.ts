// promote, abort, retry, undo, pause and resume. Each is recorded as an
// intent annotation with a JSON merge patch; the operator carries it out
// once. The App's status is checked first, so a request that the operator
// would only ignore or refuse fails here with the reason (the operator
// checks again: the App may change in between).
import { randomUUID } from 'node:crypto';
import { type Action, type Intent, IntentSchema, intentAnnotation } from '../../app/intents.ts';
import { previousStable } from '../../rollout/history.ts';
import { type ObservedReplicaSet, observeReplicaSet } from '../../rollout/observed.ts';
import type { Flags } from '../args.ts';
import { CliError, EXIT } from '../errors.ts';
import { type AppObject, Session } from '../kube.ts';

type Extra = Pick<Intent, 'revision' | 'full' | 'toRevision' | 'preview'>;

/** Something is on its way to active: a preview, a promotion, or a fast-tracked undo. */
const inFlight = (app: AppObject): boolean =>
  app.status?.preview !== undefined || app.status?.promotion !== undefined || app.status?.phase === 'Progressing';

const label = (app: AppObject) => `App "${app.metadata.name}"`;

/** What the action will ask for, or a CliError saying why it would not happen. */
async function check(
  session: Session,
  action: Action,
  app: AppObject,
  flags: Flags,
): Promise<{ extra: Extra; done: string }> {
  const status = app.status ?? {};
  const preview = status.preview;
  if (app.metadata.deletionTimestamp) throw new CliError(`${label(app)} is being deleted`);
  switch (action) {
    case 'promote': {
      if (!preview) {
        const active = status.active ? `revision ${status.active.revision} is active` : 'nothing is active yet';
        throw new CliError(
          `${label(app)} has no revision in preview to promote (phase ${status.phase ?? 'unknown'}; ${active})`,
        );
      }
      if (flags.revision !== undefined && flags.revision !== preview.revision) {
        throw new CliError(
          `revision ${flags.revision} is not in preview: ${label(app)} has revision ${preview.revision} in preview; nothing changed`,
        );
      }
      if (status.abort?.podTemplateHash === preview.podTemplateHash) {
        throw new CliError(
          `revision ${preview.revision} was aborted: run "kubectl teal retry ${app.metadata.name}" first`,
        );
      }
      return {
        // As with the HTTP API, a stated revision travels with the intent: the operator refuses it if replaced meanwhile.
        extra: {
          ...(flags.revision !== undefined ? { revision: flags.revision } : {}),
          ...(flags.full ? { full: true } : {}),
        },
        done: `promotion of revision ${preview.revision}${flags.full ? ' (full)' : ''} requested`,
      };
    }
    case 'abort': {
      if (!inFlight(app)) {
        throw new CliError(`${label(app)} has nothing in progress to abort (phase ${status.phase ?? 'unknown'})`);
      }
      const revision = preview?.revision ?? status.promotion?.revision;
      return { extra: {}, done: `abort${revision ? ` of revision ${revision}` : ''} requested` };
    }
    case 'retry': {
      if (!status.abort) throw new CliError(`${label(app)} has nothing aborted to retry`);
      return { extra: {}, done: `retry of revision ${status.abort.revision} requested` };
    }
    case 'undo': {
      const replicaSets = (await session.replicaSets(app))
        .map((rs) => observeReplicaSet(rs))
        .filter((rs): rs is ObservedReplicaSet => rs !== undefined);
      const target = flags.toRevision ?? previousStable(status.history, status.active, replicaSets);
      if (target === undefined) throw new CliError(`${label(app)} has no earlier revision to return to`);
      const rs = replicaSets.find((r) => r.revision === target && !r.deleting);
      if (!rs) {
        const known = replicaSets.map((r) => r.revision).sort((a, b) => a - b);
        throw new CliError(
          `revision ${target} of ${label(app)} has no ReplicaSet left (see revisionHistoryLimit); revisions kept: ${known.join(', ') || 'none'}`,
        );
      }
      if (rs.hash === status.active?.podTemplateHash && !inFlight(app)) {
        throw new CliError(`revision ${target} is already active in ${label(app)}`);
      }
      return {
        extra: {
          ...(flags.toRevision !== undefined ? { toRevision: flags.toRevision } : {}),
          ...(flags.preview ? { preview: true } : {}),
        },
        done: `undo to revision ${target}${flags.preview ? ' as a preview' : ''} requested`,
      };
    }
    case 'pause':
      return { extra: {}, done: status.pause ? 'already paused; pause recorded again' : 'pause requested' };
    case 'resume': {
      if (!status.pause && app.spec.paused) {
        throw new CliError(
          `${label(app)} is paused by spec.paused: set it to false (kubectl patch apps.teal.dev ${app.metadata.name} --type merge -p '{"spec":{"paused":false}}')`,
        );
      }
      return {
        extra: {},
        done: app.spec.paused
          ? 'resume requested, but spec.paused is true: the App stays paused until it is false'
          : status.pause
            ? 'resume requested'
            : 'resume requested (it was not paused)',
      };
    }
  }
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
    const intent = { id: randomUUID(), by: by.slice(0, 256), via: 'cli', at: new Date().toISOString(), ...extra };
    // The operator drops an intent it cannot read: never write one.
    IntentSchema.parse(intent);
    await session.patchApp(
      app,
      { metadata: { annotations: { [intentAnnotation(action)]: JSON.stringify(intent) } } },
      action,
      `the plugin records actions with a patch of the App: ${GRANT}, or "patch" on apps.teal.dev`,
    );
    process.stdout.write(`app "${name}" ${done} (by ${intent.by}, id ${intent.id})\n`);
    return EXIT.ok;
  };
}
