import { describe, expect, it } from 'vitest';
import type { AppStatus, NotificationDestination } from '../../src/app/schema.ts';
import { parseNamespaceDefault } from '../../src/notify/destinations.ts';
import { type Outcome, PENDING_LIMIT, withNotifications } from '../../src/notify/outbox.ts';

const NOW = '2026-01-01T00:05:00Z';
const hook: NotificationDestination = { name: 'hook', type: 'webhook', urlSecretRef: { name: 's', key: 'url' } };
const chat: NotificationDestination = {
  name: 'chat',
  type: 'slack',
  urlSecretRef: { name: 's', key: 'slack' },
  triggers: ['degraded'],
};
const healthy: AppStatus = {
  phase: 'Healthy',
  active: { revision: 1, image: 'a', podTemplateHash: 'h1', replicaSet: 'rs' },
};
const degraded: AppStatus = { ...healthy, phase: 'Degraded', message: 'deadline' };

function run(before: AppStatus | undefined, after: AppStatus, outcomes = new Map<string, Outcome>(), uid = 'u1') {
  return withNotifications({ before, after, uid, destinations: [hook, chat], outcomes, generation: 3, now: NOW });
}

describe('withNotifications', () => {
  it('writes one pending entry per transition and destination that wants it, in the same status', () => {
    const { status } = run(healthy, degraded);
    const pending = status.notifications?.pending ?? [];
    expect(pending.map((p) => [p.trigger, p.destination])).toEqual([
      ['degraded', 'hook'],
      ['degraded', 'chat'],
    ]);
    expect(pending[0]).toMatchObject({ at: NOW, revision: 1, message: 'deadline', phase: 'Degraded' });
    expect(new Set(pending.map((p) => p.id)).size).toBe(2);
    expect(status.notifications?.awaitingHealthy).toEqual({ trigger: 'degraded', revision: 1 });
  });

  it('the delivery id is stable for the same transition and differs for another App or transition', () => {
    const a = run(healthy, degraded).status.notifications?.pending?.[0]?.id;
    expect(run(healthy, degraded).status.notifications?.pending?.[0]?.id).toBe(a);
    expect(run(healthy, degraded, new Map(), 'u2').status.notifications?.pending?.[0]?.id).not.toBe(a);
    const other = {
      ...degraded,
      conditions: [{ type: 'Ready', status: 'False' as const, reason: 'x', lastTransitionTime: NOW }],
    };
    expect(run(healthy, other).status.notifications?.pending?.[0]?.id).not.toBe(a);
  });

  it('a delivered entry leaves the outbox and NotificationsDelivered turns True', () => {
    const first = run(healthy, degraded).status;
    const [one, two] = first.notifications?.pending ?? [];
    const outcomes = new Map<string, Outcome>([
      [one?.id ?? '', { result: 'delivered', message: 'to hook: HTTP 200', at: NOW }],
    ]);
    const { status, events } = run(first, structuredClone(first), outcomes);
    expect(status.notifications?.pending?.map((p) => p.id)).toEqual([two?.id]);
    expect(status.notifications?.lastDelivered).toMatchObject({ id: one?.id, destination: 'hook' });
    expect(status.conditions?.find((c) => c.type === 'NotificationsDelivered')).toMatchObject({
      status: 'True',
      reason: 'Delivered',
    });
    expect(events).toEqual([]);
  });

  it('retrying keeps the entry and says so; a permanent failure removes it with one Warning Event', () => {
    const first = run(healthy, degraded).status;
    const id = first.notifications?.pending?.[0]?.id ?? '';
    const retrying = new Map<string, Outcome>([
      [id, { result: 'retrying', message: 'to hook: HTTP 500; retrying', at: NOW }],
    ]);
    const r = run(first, structuredClone(first), retrying);
    expect(r.status.notifications?.pending).toHaveLength(2);
    expect(r.status.conditions?.find((c) => c.type === 'NotificationsDelivered')).toMatchObject({
      status: 'False',
      reason: 'DeliveryRetrying',
      message: 'to hook: HTTP 500; retrying',
    });
    const failed = new Map<string, Outcome>([[id, { result: 'failed', message: 'to hook: HTTP 404', at: NOW }]]);
    const f = run(first, structuredClone(first), failed);
    expect(f.status.notifications?.pending).toHaveLength(1);
    expect(f.status.notifications?.lastFailure).toMatchObject({ id, message: 'to hook: HTTP 404' });
    expect(f.status.conditions?.find((c) => c.type === 'NotificationsDelivered')).toMatchObject({
      status: 'False',
      reason: 'DeliveryFailed',
    });
    expect(f.events).toEqual([
      {
        type: 'Warning',
        reason: 'NotificationFailed',
        message: 'notification degraded to hook failed: to hook: HTTP 404',
      },
    ]);
  });

  it('the outbox is bounded: the oldest are dropped and counted', () => {
    const old = Array.from({ length: PENDING_LIMIT }, (_, i) => ({
      id: `old-${i}`,
      trigger: 'promoted' as const,
      destination: 'hook',
      at: NOW,
    }));
    const before = { ...healthy, notifications: { pending: old } };
    const { status, dropped } = run(before, { ...degraded, notifications: { pending: old } });
    expect(dropped).toBe(2);
    expect(status.notifications?.pending).toHaveLength(PENDING_LIMIT);
    expect(status.notifications?.pending?.[0]?.id).toBe('old-2');
    expect(status.notifications?.dropped).toBe(2);
    expect(status.conditions?.find((c) => c.type === 'NotificationsDelivered')?.reason).toBe('NotificationsDropped');
  });
});

describe('the namespace default', () => {
  it('parses the same list as spec.notifications, from YAML or JSON', () => {
    const yaml = '- name: team\n  type: slack\n  urlSecretRef: {name: team-slack, key: url}\n';
    expect(parseNamespaceDefault(yaml)).toMatchObject({ from: 'namespace', destinations: [{ name: 'team' }] });
    expect(parseNamespaceDefault(JSON.stringify([hook]))).toMatchObject({ destinations: [{ name: 'hook' }] });
    expect(parseNamespaceDefault(undefined)).toEqual({ destinations: [], from: 'none' });
  });

  it('a bad one names the field and sends nothing', () => {
    const bad = '- name: team\n  type: pager\n  urlSecretRef: {name: s, key: url}\n';
    const result = parseNamespaceDefault(bad);
    expect(result).toEqual({
      problem: expect.stringContaining('ConfigMap teal-notifications key notifications: [0].type'),
    });
    const slackSigned = [{ ...hook, type: 'slack', signingSecretRef: { name: 's', key: 'k' } }];
    expect(parseNamespaceDefault(JSON.stringify(slackSigned))).toEqual({
      problem: expect.stringContaining('[0].signingSecretRef: signingSecretRef is for type webhook only'),
    });
  });
});
