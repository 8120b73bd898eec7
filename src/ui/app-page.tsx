// The App page (issue #25 item 5): one App's release as a timeline, its active
// and preview revisions side by side, its checks, history, Events,
// notifications and restart, and its actions, each explained (item 6). Loaded
// on open and after each action, from the operator's caches.
import { type Signal, useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { useLocation } from 'preact-iso/router';
import { appPageUrl } from '../app/dashboard-pages.ts';
import type { Action } from '../app/intents.ts';
import { ActionDialog, type DialogRequest } from './action-dialog.tsx';
import { ApiFailure, getApp, listActions } from './api.ts';
import {
  type ActionEntryLike,
  type AppDetailLike,
  actionBody,
  type CheckLike,
  checksSummary,
  detailChanged,
  digestOf,
  type HistoryLike,
  isStale,
  notificationLines,
  podsOf,
  type RevisionLike,
  type RunLike,
  restartProgress,
  shortDigest,
  sparkline,
  timelineOf,
  whyDisabled,
} from './app-view.ts';
import { BuildLog } from './build-log.tsx';
import { appRow } from './live.ts';
import { PreviewsTab } from './previews-tab.tsx';
import { user } from './session.ts';

/** Opens an action's dialog (undo names the revision to return to). */
type Open = (action: Action, toRevision?: number) => void;

interface Loaded {
  view: AppDetailLike;
  actions: ActionEntryLike[];
}

/** Loads the App and its actions together, so the buttons always explain the App shown. */
function useApp(namespace: string, name: string) {
  const loaded = useSignal<Loaded | undefined>(undefined);
  const error = useSignal<string | undefined>(undefined);
  // The row's detail count the view shown was read at (see below).
  const loadedDetail = useSignal<number | undefined>(undefined);
  const load = async () => {
    loadedDetail.value = appRow(namespace, name).peek()?.detail ?? 0;
    try {
      const [view, actions] = await Promise.all([getApp(namespace, name), listActions(namespace, name)]);
      loaded.value = { view, actions };
      error.value = undefined;
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 401) user.value = null;
      else error.value = (err as Error).message;
    }
  };
  useEffect(() => void load(), [namespace, name]);
  // Live (live.ts): the App's row carries its resourceVersion; a new one means the App changed,
  // so its full view and actions are read again. Its ReplicaSets' pods and its Events change
  // without the App changing: the row's detail count says so, and they are read again too.
  const row = appRow(namespace, name).value;
  const rowVersion = row?.version;
  const shownVersion = loaded.value?.view.metadata.resourceVersion;
  const rowDetail = row?.detail ?? 0;
  useEffect(() => {
    if (isStale(shownVersion, rowVersion) || detailChanged(loadedDetail.value, row ? rowDetail : undefined)) {
      void load();
    }
  }, [rowVersion, shownVersion, rowDetail]);
  return { loaded, error, load };
}

/** The time, once a second: the scale-down countdown counts. */
function useNow(): Signal<number> {
  const now = useSignal(Date.now());
  useEffect(() => {
    const timer = setInterval(() => {
      now.value = Date.now();
    }, 1000);
    return () => clearInterval(timer);
  }, [now]);
  return now;
}

export function AppPage(props: { namespace: string; name: string }) {
  const { namespace, name } = props;
  const { loaded, error, load } = useApp(namespace, name);
  const now = useNow();
  const dialog = useSignal<DialogRequest | undefined>(undefined);
  const notice = useSignal<string | undefined>(undefined);
  const tab = tabOf(useLocation().query);

  if (error.value && !loaded.value) {
    return (
      <p role="alert" class="error">
        App {namespace}/{name} could not be read: {error.value}
      </p>
    );
  }
  if (!loaded.value) return <p aria-live="polite">Loading {name}…</p>;
  const { view, actions } = loaded.value;
  const open = (action: Action, toRevision?: number) => {
    const entry = actions.find((a) => a.action === action);
    if (entry) dialog.value = { entry, body: actionBody(action, view, toRevision), view };
  };
  const close = (message?: string) => {
    dialog.value = undefined;
    if (message) notice.value = message;
    void load();
  };
  return (
    <>
      <AppHeading namespace={namespace} name={name} view={view} notice={notice.value} />
      <Actions actions={actions} open={open} />
      <Tabs namespace={namespace} name={name} view={view} tab={tab} />
      {tab === 'previews' && view.previews ? (
        <PreviewsTab view={view.previews} />
      ) : (
        <ReleaseSections namespace={namespace} name={name} view={view} now={now.value} actions={actions} open={open} />
      )}
      {dialog.value ? (
        <ActionDialog
          request={dialog.value}
          namespace={namespace}
          name={name}
          onDone={close}
          onRefused={() => void load()}
        />
      ) : null}
    </>
  );
}

/** The App page's tabs, each at its own URL: ?tab=previews shows the Previews tab (an App with spec.previews). */
type Tab = 'release' | 'previews';

const tabOf = (query: Record<string, string | undefined>): Tab => (query.tab === 'previews' ? 'previews' : 'release');

/** The parent's Previews tab's URL: where a child's page links back to. */
const previewsUrl = (namespace: string, name: string) => `${appPageUrl(namespace, name)}?tab=previews`;

/** Release and Previews, as links (each a URL of its own); none for an App without spec.previews. */
function Tabs(props: { namespace: string; name: string; view: AppDetailLike; tab: Tab }) {
  const { namespace, name, view, tab } = props;
  if (!view.previews) return null;
  return (
    <nav class="tabs" aria-label="App page">
      <a href={appPageUrl(namespace, name)} aria-current={tab === 'release' ? 'page' : undefined}>
        Release
      </a>
      <a href={previewsUrl(namespace, name)} aria-current={tab === 'previews' ? 'page' : undefined}>
        Previews ({view.previews.previews.length})
      </a>
    </nav>
  );
}

/** A preview's child App says whose pull request it previews, linking back to that App's Previews tab. */
function PreviewOf(props: { namespace: string; of: AppDetailLike['previewOf'] }) {
  const { app, number } = props.of ?? {};
  if (!app || number === undefined) return null;
  return (
    <p class="crumbs" data-testid="preview-of">
      preview of <a href={previewsUrl(props.namespace, app)}>{app}</a> #{number}
    </p>
  );
}

/** Where the App is, its name and phase, its message, and what the last action recorded. */
function AppHeading(props: { namespace: string; name: string; view: AppDetailLike; notice: string | undefined }) {
  const { view, notice } = props;
  return (
    <>
      <p class="crumbs">
        <a href="/apps">Apps</a> / {props.namespace}
      </p>
      <h1>
        {props.name} <Phase phase={view.status?.phase} />
      </h1>
      <PreviewOf namespace={props.namespace} of={view.previewOf} />
      {view.status?.message ? <p class="message">{view.status.message}</p> : null}
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
    </>
  );
}

/** The release, from its revisions side by side to the App's Events. */
function ReleaseSections(props: {
  namespace: string;
  name: string;
  view: AppDetailLike;
  now: number;
  actions: ActionEntryLike[];
  open: Open;
}) {
  const { namespace, name, view } = props;
  return (
    <>
      <SideBySide view={view} />
      <Timeline view={view} now={props.now} />
      {view.status?.build?.commit ? (
        <BuildLog key={view.status.build.commit} ns={namespace} name={name} commit={view.status.build.commit} />
      ) : null}
      <Checks title="Pre-promotion checks" run={view.analysis?.prePromotion} />
      <Checks title="Post-promotion checks" run={view.analysis?.postPromotion} />
      <Operations view={view} />
      <History view={view} undo={props.actions.find((a) => a.action === 'undo')} open={props.open} />
      <Events view={view} />
    </>
  );
}

function Phase(props: { phase: string | undefined }) {
  const phase = props.phase ?? '';
  return <span class={`phase phase-${phase.toLowerCase() || 'unknown'}`}>{phase || 'no phase yet'}</span>;
}

/** A button per action; a disabled one says why, in the rules' or RBAC's words, beside it. */
function Actions(props: { actions: ActionEntryLike[]; open: (action: Action) => void }) {
  return (
    <section aria-labelledby="actions-h">
      <h2 id="actions-h">Actions</h2>
      <ul class="actions">
        {props.actions.map((entry) => {
          const why = whyDisabled(entry);
          const id = `why-${entry.action}`;
          return (
            <li key={entry.action}>
              <button
                type="button"
                disabled={why !== undefined}
                aria-describedby={why ? id : undefined}
                onClick={() => props.open(entry.action)}
              >
                {entry.action}
              </button>
              {why ? (
                <span id={id} class="why" data-testid={id}>
                  {why}
                </span>
              ) : null}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

function Facts(props: { facts: [string, string][] }) {
  const shown = props.facts.filter(([, v]) => v !== '');
  if (shown.length === 0) return null;
  return (
    <dl class="facts">
      {shown.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

function RevisionCard(props: {
  title: string;
  testId: string;
  revision: RevisionLike | undefined;
  view: AppDetailLike;
}) {
  const { revision, view } = props;
  const rs = view.replicaSets?.find((r) => r.revision === revision?.revision);
  return (
    <section class="card" aria-labelledby={`${props.testId}-h`} data-testid={props.testId}>
      <h2 id={`${props.testId}-h`}>
        {props.title}
        {revision?.revision !== undefined ? `: revision ${revision.revision}` : ''}
      </h2>
      {revision?.revision === undefined ? (
        <p class="muted">None.</p>
      ) : (
        <Facts
          facts={[
            ['image', revision.image ?? ''],
            ['digest', digestOf(revision.image)],
            ['commit', revision.commit ?? ''],
            ['pods available', podsOf(view, revision.revision)],
            ['template hash', revision.podTemplateHash ?? ''],
            // Configuration is part of the revision: each ConfigMap or Secret by its content hash, never its data.
            ...(rs?.config ?? []).map((c): [string, string] => [`${c.kind ?? ''} ${c.source ?? ''}`, c.hash ?? '']),
          ]}
        />
      )}
    </section>
  );
}

function SideBySide(props: { view: AppDetailLike }) {
  const { view } = props;
  return (
    <div class="side-by-side">
      <RevisionCard title="Active" testId="active" revision={view.revisions?.active} view={view} />
      <RevisionCard title="Preview" testId="preview" revision={view.revisions?.preview} view={view} />
    </div>
  );
}

const STATE_WORDS = {
  done: 'done',
  current: 'now',
  failed: 'failed',
  waiting: 'not yet',
  none: 'not part of this release',
};

function Timeline(props: { view: AppDetailLike; now: number }) {
  return (
    <section aria-labelledby="timeline-h">
      <h2 id="timeline-h">Release</h2>
      <ol class="timeline">
        {timelineOf(props.view, props.now).map((step) => (
          <li key={step.key} class={`step step-${step.state}`} data-testid={`step-${step.key}`}>
            <span class="step-title">{step.title}</span> <span class="step-state">({STATE_WORDS[step.state]})</span>
            <Facts facts={step.facts} />
          </li>
        ))}
      </ol>
    </section>
  );
}

/** A run of checks as a table: each check, and each of its measurements. */
function Checks(props: { title: string; run: RunLike | undefined }) {
  const { run } = props;
  if (!run) return null;
  const id = props.title.toLowerCase().replace(/\W+/g, '-');
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>
        {props.title} (revision {run.revision ?? '?'}): {checksSummary(run)}
      </h2>
      {run.message ? <p class="message">{run.message}</p> : null}
      <table class="detail">
        <thead>
          <tr>
            <th scope="col">Check</th>
            <th scope="col">Phase</th>
            <th scope="col">Measurement</th>
            <th scope="col">Value</th>
            <th scope="col">Taken</th>
          </tr>
        </thead>
        <tbody>
          {(run.checks ?? []).flatMap((check) => {
            const measurements = check.measurements?.length ? check.measurements : [undefined];
            return measurements.map((m, i) => (
              <tr key={`${check.name}-${m?.n ?? i}`}>
                <td class="id">
                  {i === 0 ? check.name : ''}
                  {i === 0 ? <Sparkline check={check} /> : null}
                </td>
                <td>{i === 0 ? `${check.phase ?? ''}${check.message ? `: ${check.message}` : ''}` : ''}</td>
                <td>{m ? `#${m.n ?? i + 1} ${m.phase ?? ''}` : 'none yet'}</td>
                <td class="message">{m ? `${m.value ?? ''}${m.message ? ` (${m.message})` : ''}` : ''}</td>
                <td>{m?.finishedAt ?? m?.startedAt ?? ''}</td>
              </tr>
            ));
          })}
        </tbody>
      </table>
    </section>
  );
}

/** A check's numeric measurements as a line, when there are two or more; the table holds the values. */
function Sparkline(props: { check: CheckLike }) {
  const values = (props.check.measurements ?? []).map((m) => m.value);
  const points = sparkline(values, 96, 24);
  if (!points) return null;
  return (
    <svg
      class="spark"
      viewBox="-2 -2 100 28"
      width="100"
      height="28"
      role="img"
      aria-label={`${props.check.name ?? 'check'}: ${values.filter((v) => v !== undefined).join(', ')}`}
    >
      <polyline points={points} fill="none" stroke="currentColor" stroke-width="2" />
    </svg>
  );
}

/** Restart progress and notifications' delivery state, as status holds them. */
function Operations(props: { view: AppDetailLike }) {
  const restart = restartProgress(props.view);
  const notifications = notificationLines(props.view);
  const pending = props.view.pendingIntents ?? [];
  if (!restart && notifications.length === 0 && pending.length === 0) return null;
  return (
    <section aria-labelledby="ops-h">
      <h2 id="ops-h">Under way</h2>
      <Facts
        facts={[
          ['restart', restart],
          ...pending.map((p): [string, string] => [
            `${p.action ?? ''} requested`,
            `by ${p.by ?? ''} (${p.via ?? ''}) at ${p.at ?? ''}`,
          ]),
          ...notifications.map(([k, v]): [string, string] => [`notification ${k}`, v]),
        ]}
      />
    </section>
  );
}

/** The history, newest first, each earlier revision with a button to undo to it. */
function History(props: { view: AppDetailLike; undo: ActionEntryLike | undefined; open: Open }) {
  const history = [...(props.view.revisions?.history ?? [])].reverse();
  return (
    <section aria-labelledby="history-h">
      <h2 id="history-h">History</h2>
      {history.length === 0 ? (
        <p class="muted">No revision was promoted yet.</p>
      ) : (
        <HistoryTable history={history} {...props} />
      )}
    </section>
  );
}

function HistoryTable(props: {
  history: HistoryLike[];
  view: AppDetailLike;
  undo: ActionEntryLike | undefined;
  open: Open;
}) {
  const active = props.view.revisions?.active?.revision;
  return (
    <table class="detail">
      <thead>
        <tr>
          <th scope="col">Revision</th>
          <th scope="col">Commit</th>
          <th scope="col">Digest</th>
          <th scope="col">Promoted</th>
          <th scope="col">By</th>
          <th scope="col">Via</th>
          <th scope="col">Undo</th>
        </tr>
      </thead>
      <tbody>
        {props.history.map((h, i) => (
          <HistoryRow
            key={`${h.revision}-${h.promotedAt ?? i}`}
            entry={h}
            active={active}
            undo={props.undo}
            open={props.open}
          />
        ))}
      </tbody>
    </table>
  );
}

function HistoryRow(props: {
  entry: HistoryLike;
  active: number | undefined;
  undo: ActionEntryLike | undefined;
  open: Open;
}) {
  const { entry: h } = props;
  return (
    <tr>
      <td class="num">{h.revision}</td>
      <td class="id">{h.commit?.slice(0, 7) ?? ''}</td>
      <td class="id">{shortDigest(h.image)}</td>
      <td>{h.promotedAt ?? ''}</td>
      <td>{h.promotedBy ?? ''}</td>
      <td>{`${h.promotedVia ?? ''}${h.checksSkipped ? ', checks skipped' : ''}`}</td>
      <td>
        {h.revision !== props.active && h.revision !== undefined ? (
          <UndoButton revision={h.revision} undo={props.undo} open={props.open} />
        ) : (
          'active'
        )}
      </td>
    </tr>
  );
}

/** Undo to an earlier revision; disabled, it says why (RBAC's words) in its title. */
function UndoButton(props: { revision: number; undo: ActionEntryLike | undefined; open: Open }) {
  const { revision, undo } = props;
  const mayUndo = undo?.rbac.allowed === true;
  return (
    <button
      type="button"
      class="secondary"
      disabled={!mayUndo}
      title={mayUndo ? undefined : undo?.rbac.reason}
      onClick={() => props.open('undo', revision)}
    >
      Undo to {revision}
    </button>
  );
}

function Events(props: { view: AppDetailLike }) {
  const events = props.view.events ?? [];
  return (
    <section aria-labelledby="events-h">
      <h2 id="events-h">Events</h2>
      {events.length === 0 ? (
        <p class="muted">No Events (the API server keeps them for an hour by default).</p>
      ) : (
        <table class="detail">
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Reason</th>
              <th scope="col">Message</th>
              <th scope="col">Count</th>
              <th scope="col">Last seen</th>
            </tr>
          </thead>
          <tbody>
            {events.map((e, i) => (
              <tr key={`${e.at}-${e.reason}-${i}`}>
                <td class={e.type === 'Warning' ? 'warning' : undefined}>{e.type}</td>
                <td>{e.reason}</td>
                <td class="message">{e.message}</td>
                <td class="num">{e.count}</td>
                <td>{e.at}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
