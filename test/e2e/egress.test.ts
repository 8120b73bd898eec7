// Where checks and notifications may connect (issue #24 S4): an App author's
// URL must not read what only the operator can reach. An operator on the
// default (the chart's and the image's: no --egress-allow) refuses loopback,
// link-local and its own addresses, judged on the address it would connect to,
// with an Error measurement and Warning Events naming the host and the flag;
// one that lists 127.0.0.1 connects there. Nothing here leaves 127.0.0.1: a
// refused request is refused before it connects.
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppInput } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { activeRevision, checkServers, webCheck } from '../support/analysis.ts';
import { createApp, patchSpec, phase, type StoredApp, waitForApp } from '../support/apps.ts';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Receiver, startReceiver } from '../support/notify-receiver.ts';
import { type Operator, startOperator, TEST_EGRESS } from '../support/operator.ts';

const { core } = clients();
const { serve, closeAll: closeServers } = checkServers();
const receivers: Receiver[] = [];
/** One namespace and operator on the default policy, one that allows the tests' 127.0.0.1. */
const guarded = { ns: '', remove: async () => {}, operator: undefined as Operator | undefined };
const open = { ns: '', remove: async () => {}, operator: undefined as Operator | undefined };

beforeAll(async () => {
  ({ name: guarded.ns, remove: guarded.remove } = await createNamespace('egress-guarded'));
  ({ name: open.ns, remove: open.remove } = await createNamespace('egress-open'));
  guarded.operator = await startOperator({ namespace: guarded.ns, egressAllow: [] });
  open.operator = await startOperator({ namespace: open.ns, egressAllow: [TEST_EGRESS] });
});

afterAll(async () => {
  await guarded.operator?.stop();
  await open.operator?.stop();
  await closeServers();
  for (const r of receivers) await r.close();
  await guarded.remove();
  await open.remove();
});

/** An App whose revision 2 is gated by one web check, which may err once at most. */
function gatedBy(name: string, url: string): AppInput {
  const check = webCheck('probe', url, { consecutiveErrorLimit: 0 });
  return e2eApp(name, { blueGreen: { autoPromotionEnabled: true, prePromotionAnalysis: { metrics: [check] } } });
}

/** Releases the App, then a revision 2 its check decides on; returns the App once that is settled. */
async function measured(ns: string, body: AppInput, settled: (a: StoredApp) => boolean): Promise<StoredApp> {
  await createApp(ns, body);
  await waitForApp(ns, body.metadata.name, 'first release Healthy', phase('Healthy'));
  await patchSpec(ns, body.metadata.name, { image: 'registry.example.com/team/web:2' });
  return waitForApp(ns, body.metadata.name, 'revision 2 decided by its check', settled);
}

const aborted = (a: StoredApp) => a.status?.abort !== undefined && phase('Degraded')(a);
const firstMeasurement = (a: StoredApp) => a.status?.prePromotionAnalysis?.checks[0]?.measurements[0];

async function warnings(ns: string, name: string, reason: string): Promise<string[]> {
  return waitFor(`${name}: a ${reason} Event`, async () => {
    const list = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` });
    const found = list.items.filter((e) => e.type === 'Warning' && e.reason === reason).map((e) => e.message ?? '');
    return found.length > 0 ? found : undefined;
  });
}

/** A non-loopback address of this machine: the operator's own, as its pod IP would be. */
function ownAddress(): string {
  const found = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && !i.internal && i.family === 'IPv4');
  if (!found) throw new Error('this machine has no non-loopback IPv4 address to test with');
  return found.address;
}

describe('web checks on the default policy', () => {
  it.each([
    [
      "the operator's own /metrics on loopback",
      () => `http://127.0.0.1:${guarded.operator?.healthPort}/metrics`,
      '127.0.0.1',
    ],
    [
      'a loopback name, refused on the address it resolves to',
      () => `http://localhost:${guarded.operator?.healthPort}/metrics`,
      'localhost (127.0.0.1)',
    ],
    [
      'a link-local metadata service',
      () => 'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
      '169.254.169.254',
    ],
    [
      "the operator's own pod address",
      () => `http://${ownAddress()}:${guarded.operator?.healthPort}/metrics`,
      ownAddress(),
    ],
  ])('refuse %s, with an Error and a Warning naming the host and the flag', async (_, url, shown) => {
    const name = `refused-${Math.random().toString(36).slice(2, 8)}`;
    const app = await measured(guarded.ns, gatedBy(name, url()), aborted);
    const m = firstMeasurement(app);
    expect(m?.phase).toBe('Error');
    expect(m?.message).toContain(`refused to connect to ${shown}: it is `);
    expect(m?.message).toContain('--egress-allow');
    expect(m?.value).toBeUndefined();
    const events = await warnings(guarded.ns, name, 'MeasurementFailed');
    expect(events.join('\n')).toContain(`refused to connect to ${shown}`);
    expect(events.join('\n')).toContain('--egress-allow');
  });
});

describe('notifications on the default policy', () => {
  it('refuse a receiver on loopback for good: a NotificationFailed Warning names the address and the flag', async () => {
    const receiver = await startReceiver({ signingKey: 'k' });
    receivers.push(receiver);
    await core.createNamespacedSecret({
      namespace: guarded.ns,
      body: { metadata: { name: 'hook' }, stringData: { url: `${receiver.url}/secret-path-token` } },
    });
    const body = e2eApp('told');
    body.spec.notifications = [{ name: 'hook', type: 'webhook', urlSecretRef: { name: 'hook', key: 'url' } }];
    await createApp(guarded.ns, body);
    const events = await warnings(guarded.ns, 'told', 'NotificationFailed');
    expect(events[0]).toContain('to hook: refused to connect to 127.0.0.1: it is ');
    expect(events[0]).toContain('--egress-allow');
    expect(events.join('\n')).not.toContain('secret-path-token');
    const app = await waitForApp(guarded.ns, 'told', 'the failure recorded', (a) =>
      Boolean(a.status?.notifications?.lastFailure),
    );
    expect(app.status?.notifications?.lastFailure?.message).toContain('refused to connect to 127.0.0.1');
    expect(receiver.deliveries).toEqual([]);
  });
});

describe('an operator that lists 127.0.0.1 in --egress-allow', () => {
  it('lets a web check and a notification connect there', async () => {
    const server = await serve(() => ({ status: 200, body: { ok: true } }));
    const receiver = await startReceiver({ signingKey: 'k' });
    receivers.push(receiver);
    await core.createNamespacedSecret({
      namespace: open.ns,
      body: { metadata: { name: 'hook' }, stringData: { url: receiver.url } },
    });
    const body = gatedBy('allowed', `${server.url}/healthz`);
    body.spec.notifications = [{ name: 'hook', type: 'webhook', urlSecretRef: { name: 'hook', key: 'url' } }];
    const app = await measured(open.ns, body, activeRevision(2));
    expect(firstMeasurement(app)).toMatchObject({ phase: 'Successful' });
    expect(server.requestsTo('/healthz')).toHaveLength(1);
    await waitFor(
      'a notification delivered',
      async () => receiver.deliveries.some((d) => d.status === 200) || undefined,
    );
  });
});
