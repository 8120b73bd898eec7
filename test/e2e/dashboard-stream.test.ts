// The dashboard's live stream, raw (issue #25 item 8 and tests 3): GET
// /api/v1/stream against a real operator on the real control plane, read byte
// for byte by test/support/sse.ts. The operator is a standby (another identity
// holds its Lease), so the status written here stays as written, and it talks
// to the API server through a recording proxy, so the test counts what opening
// streams costs there.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { type ApiRecorder, startApiRecorder } from '../support/api-recorder.ts';
import { createApp } from '../support/apps.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';
import { dataOf, openSse, type SseStream } from '../support/sse.ts';
import { allowed, bind, serviceAccount } from '../support/users.ts';

let a: { name: string; remove: () => Promise<void> };
let b: { name: string; remove: () => Promise<void> };
let root: string;
let recorder: ApiRecorder;
let operator: Operator;
let base: string;
/** May list Apps in A only. */
let viewer: string;
/** May list Apps in A and in B. */
let both: string;
const open: SseStream[] = [];

async function setStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<void> {
  await clients().custom.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function stream(token: string, headers: Record<string, string> = {}, query = ''): Promise<SseStream> {
  const s = await openSse(`${base}/api/v1/stream${query}`, { authorization: `Bearer ${token}`, ...headers });
  open.push(s);
  return s;
}

type Row = { namespace: string; name: string; message: string; version: string };
const snapshotRows = (s: SseStream) =>
  s.next('a snapshot', (e) => e.event === 'snapshot').then((e) => dataOf<{ rows: Row[] }>(e).rows);
const names = (rows: Row[]) => rows.map((r) => `${r.namespace}/${r.name}`).sort();

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/** Closes the test's streams and waits until the operator counts them closed. */
async function closeAll(): Promise<void> {
  for (const s of open.splice(0)) s.close();
  await waitFor('no stream open on the operator', async () =>
    (await metric('teal_dashboard_streams')) === 0 ? true : undefined,
  );
}

beforeAll(async () => {
  [a, b] = await Promise.all([createNamespace('stream-a'), createNamespace('stream-b')]);
  root = await mkdtemp(join(tmpdir(), 'teal-stream-'));
  recorder = await startApiRecorder(root);
  await clients()
    .kc.makeApiClient(CoordinationV1Api)
    .createNamespacedLease({
      namespace: a.name,
      body: {
        metadata: { name: 'teal-controller' },
        spec: { holderIdentity: 'another-replica', leaseDurationSeconds: 3600 },
      },
    });
  await Promise.all([
    createApp(a.name, e2eApp('web')),
    createApp(a.name, e2eApp('api')),
    createApp(b.name, e2eApp('secret-plans')),
  ]);
  await setStatus(a.name, 'web', { phase: 'Healthy', message: 'first' });
  viewer = await serviceAccount(a.name, 'viewer', ['list']);
  both = await serviceAccount(a.name, 'both', ['list']);
  await clients().rbac.createNamespacedRole({
    namespace: b.name,
    body: { metadata: { name: 'lister' }, rules: [{ apiGroups: [GROUP], resources: [PLURAL], verbs: ['list'] }] },
  });
  await bind(a.name, 'both', 'Role', 'lister', b.name);
  await allowed(a.name, 'both', 'list', b.name);
  operator = await startOperator({
    namespace: `${a.name},${b.name}`,
    kubeconfig: recorder.kubeconfig,
    extraArgs: [
      '--leader-election-namespace',
      a.name,
      '--dashboard-max-streams',
      '3',
      '--dashboard-max-streams-per-session',
      '2',
      '--session-review-interval',
      '1s',
    ],
  });
  base = `http://127.0.0.1:${operator.healthPort}`;
  // The App cache fills after the operator is ready to serve.
  await waitFor('the stream shows the Apps', async () => {
    const s = await openSse(`${base}/api/v1/stream`, { authorization: `Bearer ${both}` });
    try {
      return (await snapshotRows(s)).length === 3 ? true : undefined;
    } finally {
      s.close();
    }
  });
  await closeAll();
});

// Each test's streams closed, whatever its outcome: the next counts streams against the caps.
afterEach(closeAll);

afterAll(async () => {
  for (const s of open) s.close();
  await operator?.stop();
  await recorder?.stop();
  await Promise.all([a?.remove(), b?.remove()]);
  if (root) await rm(root, { recursive: true, force: true });
});

describe('the live stream, raw', () => {
  it('answers 401 without a session, as every API route', async () => {
    const s = await openSse(`${base}/api/v1/stream`);
    s.close();
    expect(s.status).toBe(401);
  });

  it("a user who may list Apps in A gets A's rows and later changes, and nothing of B ever, not even its name", async () => {
    const mine = await stream(viewer);
    const witness = await stream(both);
    expect(mine.status).toBe(200);
    expect(mine.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(names(await snapshotRows(mine))).toEqual([`${a.name}/api`, `${a.name}/web`]);
    expect(names(await snapshotRows(witness))).toEqual([`${a.name}/api`, `${a.name}/web`, `${b.name}/secret-plans`]);

    // B changes first: the witness sees it, then A changes, and the viewer sees that.
    await setStatus(b.name, 'secret-plans', { phase: 'Degraded', message: 'B only' });
    await createApp(b.name, e2eApp('more-plans'));
    await witness.next('B changed', (e) => e.event === 'upsert' && dataOf<Row>(e).name === 'more-plans');
    await setStatus(a.name, 'web', { phase: 'Healthy', message: 'second' });
    const update = await mine.next('web changed', (e) => e.event === 'upsert' && dataOf<Row>(e).message === 'second');
    expect(dataOf<Row>(update)).toMatchObject({ namespace: a.name, name: 'web', phase: 'Healthy' });
    await witness.next('web changed', (e) => e.event === 'upsert' && dataOf<Row>(e).message === 'second');

    for (const text of [b.name, 'secret-plans', 'more-plans', 'B only']) expect(mine.raw()).not.toContain(text);
    expect(mine.events.map((e) => e.event)).toEqual(['snapshot', 'upsert']);
  });

  it('opening streams adds no watch and no list on the API server: only reviews of the callers', async () => {
    const before = recorder.requests.length;
    const streams = [await stream(viewer), await stream(viewer), await stream(both)];
    for (const s of streams) await snapshotRows(s);
    await setStatus(a.name, 'api', { phase: 'Healthy', message: 'seen by all three' });
    for (const s of streams) await s.next('the change', (e) => e.data.includes('seen by all three'));
    // Only the TokenReviews and SubjectAccessReviews of the callers (cached): no GET, so no list and no watch.
    const added = recorder.requests.slice(before);
    expect(added.filter((r) => !/\/(tokenreviews|subjectaccessreviews)$/.test(r.path))).toEqual([]);
  });

  it('caps streams per session and in total, with a 429 naming the flag; the metrics count the open streams', async () => {
    const first = [await stream(viewer), await stream(viewer)];
    for (const s of first) await snapshotRows(s);
    const third = await stream(viewer);
    expect(third.status).toBe(429);
    await waitFor('the refusal body', async () => (third.ended() ? true : undefined));
    expect(third.raw()).toContain('--dashboard-max-streams-per-session');
    expect(third.raw()).toContain('at most 2');

    await snapshotRows(await stream(both));
    expect(await metric('teal_dashboard_streams')).toBe(3);
    const over = await stream(both);
    expect(over.status).toBe(429);
    await waitFor('the refusal body', async () => (over.ended() ? true : undefined));
    expect(over.raw()).toContain('at most 3 in all (--dashboard-max-streams)');
    expect(await metric('teal_dashboard_streams_refused_total{limit="session"}')).toBeGreaterThanOrEqual(1);
    await closeAll();
    // A closed stream frees its place.
    expect((await stream(viewer)).status).toBe(200);
  });

  it('resumes from Last-Event-ID with the events missed and no snapshot; an id it cannot resume from gets a snapshot', async () => {
    const first = await stream(viewer);
    await snapshotRows(first);
    const lastId = first.events.at(-1)?.id ?? '';
    first.close();
    await setStatus(a.name, 'web', { phase: 'Healthy', message: 'while away' });
    // The change reached the hub: a stream opened now sees it in its snapshot.
    const probe = await stream(viewer);
    await waitFor('the change in a snapshot', async () => {
      const s = await openSse(`${base}/api/v1/stream`, { authorization: `Bearer ${both}` });
      try {
        return (await snapshotRows(s)).some((r) => r.message === 'while away') ? true : undefined;
      } finally {
        s.close();
      }
    });
    probe.close();

    const resumed = await stream(viewer, { 'last-event-id': lastId });
    await resumed.next('the missed change', (e) => e.event === 'upsert' && dataOf<Row>(e).message === 'while away');
    expect(resumed.events[0]?.event).toBe('resumed');
    expect(resumed.events.some((e) => e.event === 'snapshot')).toBe(false);

    // The same, given as ?lastEventId (a page that opens the stream anew).
    resumed.close();
    const byQuery = await stream(viewer, {}, `?lastEventId=${encodeURIComponent(lastId)}`);
    await byQuery.next('the missed change', (e) => e.data.includes('while away'));
    expect(byQuery.events[0]?.event).toBe('resumed');
    byQuery.close();

    // An id of another operator process (or scope) cannot be resumed: a snapshot replaces everything.
    const [, seq, scope] = lastId.split('.');
    const foreign = await stream(viewer, { 'last-event-id': `00ff00ff.${seq}.${scope}` });
    expect(names(await snapshotRows(foreign))).toEqual([`${a.name}/api`, `${a.name}/web`]);
  });

  it("removing the RoleBinding deletes A's rows from the open stream and sends no more of A; binding again sends them", async () => {
    const token = await serviceAccount(a.name, 'revoked', ['list']);
    const s = await stream(token);
    expect(names(await snapshotRows(s))).toEqual([`${a.name}/api`, `${a.name}/web`]);
    await clients().rbac.deleteNamespacedRoleBinding({ namespace: a.name, name: 'revoked-revoked' });
    // Applied within RECHECK_MS plus the list review's cache time (30 s); the deadline is generous.
    await s.next('api deleted', (e) => e.event === 'delete' && dataOf<Row>(e).name === 'api');
    await s.next('web deleted', (e) => e.event === 'delete' && dataOf<Row>(e).name === 'web');
    const after = s.events.length;
    await setStatus(a.name, 'web', { phase: 'Healthy', message: 'not for the revoked' });
    await bind(a.name, 'revoked', 'Role', 'revoked');
    await s.next('web back', (e) => e.event === 'upsert' && dataOf<Row>(e).name === 'web', after);
    // Sent again as it is now, not as it was: nothing of the time without the right is missing.
    expect(
      s.events
        .slice(after)
        .filter((e) => e.event === 'upsert')
        .map((e) => dataOf<Row>(e).name)
        .sort(),
    ).toEqual(['api', 'web']);
  });

  it('ends the stream of a session whose token is no longer valid, telling why', async () => {
    const t = await serviceAccount(a.name, 'leaving', ['list']);
    const login = await fetch(`${base}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: t }),
    });
    const cookie = login.headers.get('set-cookie')?.split(';')[0] ?? '';
    const s = await openSse(`${base}/api/v1/stream`, { cookie });
    open.push(s);
    await snapshotRows(s);
    await clients().core.deleteNamespacedServiceAccount({ namespace: a.name, name: 'leaving' });
    const ended = await s.next('the end', (e) => e.event === 'ended');
    expect(dataOf<{ message: string }>(ended).message).toBe('the session ended: log in again');
    await waitFor('the stream closed', async () => (s.ended() ? true : undefined));
  });
});
