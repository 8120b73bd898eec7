// Notifications end to end (issue #15): the operator runs as a child process,
// receivers listen on 127.0.0.1. Each transition is delivered once (a retry
// or a kill repeats only its id), signed so that Teal's own webhook check
// verifies it, and taken out of status once delivered; a kill -9 while a
// delivery is held open and a handover between two replicas lose nothing and
// add no second delivery of a transition.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppInput, AppStatus, NotificationTrigger } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp, getApp, intent, patchSpec, phase, type StoredApp, waitForApp } from '../support/apps.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Delivery, type Receiver, startReceiver } from '../support/notify-receiver.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const { core } = clients();
const SIGNING_KEY = 'e2e-signing-key';
let ns: string;
let removeNs: () => Promise<void>;
let operator: Operator;
const operators: Operator[] = [];
const receivers: Receiver[] = [];

beforeAll(async () => {
  ({ name: ns, remove: removeNs } = await createNamespace('notify'));
  operator = await start();
});

afterAll(async () => {
  for (const o of operators) await o.stop().catch(() => undefined);
  for (const r of receivers) await r.close();
  await removeNs?.();
});

async function start(): Promise<Operator> {
  const o = await startOperator({ namespace: ns });
  operators.push(o);
  return o;
}

/** A receiver, its URL in a Secret of its own, and an App that notifies it. */
async function notifiedApp(
  name: string,
  options: { answers?: number[]; holdFirst?: boolean; triggers?: NotificationTrigger[] } = {},
): Promise<Receiver> {
  const receiver = await startReceiver({ signingKey: SIGNING_KEY, ...options });
  receivers.push(receiver);
  await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: `${name}-hook` }, stringData: { url: receiver.url, key: SIGNING_KEY } },
  });
  const app: AppInput = e2eApp(name);
  app.spec.notifications = [
    {
      name: 'hook',
      type: 'webhook',
      urlSecretRef: { name: `${name}-hook`, key: 'url' },
      signingSecretRef: { name: `${name}-hook`, key: 'key' },
      ...(options.triggers ? { triggers: options.triggers } : {}),
    },
  ];
  await createApp(ns, app);
  return receiver;
}

const pending = (app: StoredApp) => (app.status as AppStatus | undefined)?.notifications?.pending ?? [];
const outboxEmpty = (app: StoredApp) => pending(app).length === 0;

async function delivered(receiver: Receiver, what: string, check: (ds: Delivery[]) => boolean): Promise<void> {
  await waitFor(what, async () => (check(receiver.deliveries.filter((d) => d.status === 200)) ? true : undefined));
}

const count = (ds: Delivery[], trigger: string) => ds.filter((d) => d.trigger === trigger).length;

/** Each id stands for one transition: it may come again (a retry, a kill), never with another trigger. */
function distinctTransitions(ds: Delivery[]): Map<string, string> {
  const byId = new Map<string, string>();
  for (const d of ds) {
    expect(byId.get(d.id) ?? d.trigger).toBe(d.trigger);
    byId.set(d.id, d.trigger);
  }
  return byId;
}

async function metric(o: Operator, series: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${o.healthPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : undefined;
}

const isLeader = async (o: Operator) =>
  (await metric(o, 'leader_election_master_status{name="teal-controller"}')) === 1;

describe('notifications', () => {
  it('tells each transition once, signed and verifiable, and empties the outbox', async () => {
    const receiver = await notifiedApp('told');
    await waitForApp(ns, 'told', 'first release', phase('Healthy'));
    await delivered(receiver, 'first release told', (ds) => count(ds, 'promoted') === 1 && count(ds, 'healthy') === 1);
    await patchSpec(ns, 'told', { image: 'registry.example.com/team/web:2' });
    await waitForApp(ns, 'told', 'preview', phase('Paused'));
    await delivered(receiver, 'preview-ready told', (ds) => count(ds, 'preview-ready') === 1);
    await intent(ns, 'told', 'promote');
    await waitForApp(ns, 'told', 'revision 2', (a) => phase('Healthy')(a) && a.status?.active?.revision === 2);
    await delivered(receiver, 'promotion told', (ds) => count(ds, 'promoted') === 2 && count(ds, 'healthy') === 2);
    const app = await waitForApp(ns, 'told', 'outbox empty', outboxEmpty);

    const ds = receiver.deliveries;
    expect(ds.every((d) => d.verified === true && d.idsAgree)).toBe(true);
    expect(ds).toHaveLength(5);
    expect(distinctTransitions(ds).size).toBe(5);
    const promotions = ds.filter((d) => d.trigger === 'promoted').map((d) => d.body);
    expect(promotions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ revision: 1, via: 'first-release', app: { namespace: ns, name: 'told' } }),
        expect.objectContaining({ revision: 2, by: 'e2e', via: 'kubectl' }),
      ]),
    );
    const status = app.status as AppStatus;
    expect(status.conditions?.find((c) => c.type === 'NotificationsDelivered')).toMatchObject({ status: 'True' });
    expect(status.notifications?.lastDelivered?.destination).toBe('hook');
    // The URL holds a token: it reaches neither the log nor status.
    expect(operator.logs()).not.toContain(receiver.token);
    expect(JSON.stringify(status)).not.toContain(receiver.token);
  });

  it('a receiver that answers 500 then 200 gets the same delivery again, after a retry', async () => {
    const receiver = await notifiedApp('retried', { answers: [500, 200], triggers: ['promoted'] });
    await delivered(receiver, 'promotion delivered', (ds) => ds.length === 1);
    const app = await waitForApp(ns, 'retried', 'outbox empty', (a) => phase('Healthy')(a) && outboxEmpty(a));
    expect(receiver.deliveries.map((d) => [d.trigger, d.status])).toEqual([
      ['promoted', 500],
      ['promoted', 200],
    ]);
    const [first, second] = receiver.deliveries;
    expect(second?.id).toBe(first?.id);
    expect((app.status as AppStatus).notifications?.lastDelivered?.id).toBe(first?.id);
  });

  it('a kill -9 while a delivery is held open: the new operator sends the same id, then clears it', async () => {
    const receiver = await notifiedApp('killed', { holdFirst: true, triggers: ['promoted'] });
    const held = await receiver.held;
    // The outbox landed before the send: the held delivery is in status.
    const before = await getApp(ns, 'killed');
    expect(pending(before).map((p) => p.id)).toEqual([held.id]);
    await operator.kill();
    receiver.release();
    operator = await start();
    await delivered(receiver, 'the held delivery again', (ds) => ds.length === 1);
    await waitForApp(ns, 'killed', 'outbox empty', outboxEmpty);
    expect(receiver.deliveries.map((d) => d.id)).toEqual([held.id, held.id]);
    expect(receiver.deliveries.every((d) => d.verified)).toBe(true);
  });

  it('a handover between two replicas does not deliver a transition twice', async () => {
    const standby = await start();
    const receiver = await notifiedApp('handed');
    await waitForApp(ns, 'handed', 'first release, told', (a) => phase('Healthy')(a) && outboxEmpty(a));
    await delivered(receiver, 'first release told', (ds) => count(ds, 'healthy') === 1);
    const [leader, other] = (await isLeader(standby)) ? [standby, operator] : [operator, standby];
    expect(await isLeader(leader)).toBe(true);
    expect(await metric(leader, 'teal_notifications_total{type="webhook",trigger="healthy",result="delivered"}')).toBe(
      1,
    );
    await leader.stop();
    operator = other;
    await waitFor('the standby leads', async () => ((await isLeader(other)) ? true : undefined));
    await patchSpec(ns, 'handed', { image: 'registry.example.com/team/web:2' });
    await waitForApp(ns, 'handed', 'preview, told', (a) => phase('Paused')(a) && outboxEmpty(a));
    await delivered(receiver, 'preview-ready told', (ds) => count(ds, 'preview-ready') === 1);
    const ds = receiver.deliveries;
    expect(ds.map((d) => d.trigger).sort()).toEqual(['healthy', 'preview-ready', 'promoted']);
    expect(distinctTransitions(ds).size).toBe(3);
    expect(ds.every((d) => d.status === 200 && d.verified)).toBe(true);
  });

  it('an App that declares none uses the namespace default; a bad default sends nothing and names the field', async () => {
    const receiver = await startReceiver({ signingKey: SIGNING_KEY });
    receivers.push(receiver);
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'team-hook' }, stringData: { url: receiver.url, key: SIGNING_KEY } },
    });
    const team = [
      {
        name: 'team',
        type: 'webhook',
        urlSecretRef: { name: 'team-hook', key: 'url' },
        signingSecretRef: { name: 'team-hook', key: 'key' },
        triggers: ['promoted'],
      },
    ];
    const configMap = (notifications: string) => ({
      metadata: { name: 'teal-notifications' },
      data: { notifications },
    });
    await core.createNamespacedConfigMap({ namespace: ns, body: configMap(JSON.stringify(team)) });
    await createApp(ns, e2eApp('defaulted'));
    await delivered(receiver, 'the team default told', (ds) => ds.length === 1);
    expect(receiver.deliveries[0]).toMatchObject({ trigger: 'promoted', verified: true });
    expect(receiver.deliveries[0]?.body.app).toEqual({ namespace: ns, name: 'defaulted' });

    const bad = '- name: team\n  type: pager\n  urlSecretRef: {name: team-hook, key: url}\n';
    await core.replaceNamespacedConfigMap({ namespace: ns, name: 'teal-notifications', body: configMap(bad) });
    await createApp(ns, e2eApp('misled'));
    const warning = await waitFor('an InvalidNotifications Event', async () => {
      const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=misled' });
      return events.items.find((e) => e.reason === 'InvalidNotifications');
    });
    expect(warning.message).toContain('ConfigMap teal-notifications key notifications: [0].type');
    const misled = await waitForApp(ns, 'misled', 'first release', phase('Healthy'));
    expect((misled.status as AppStatus).notifications).toBeUndefined();
    expect(receiver.deliveries).toHaveLength(1);
  });
});
