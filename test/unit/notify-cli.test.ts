import { describe, expect, it } from 'vitest';
import { notificationsLine } from '../../src/cli/commands/status.ts';
import type { AppObject } from '../../src/cli/kube.ts';

const app = (status: AppObject['status']): AppObject =>
  ({ metadata: { name: 'web', namespace: 'team' }, spec: {}, status }) as AppObject;

describe('kubectl teal status: the notifications line', () => {
  it('says nothing while all is delivered', () => {
    expect(notificationsLine(app({ phase: 'Healthy' }))).toBe('');
    const delivered = {
      type: 'NotificationsDelivered',
      status: 'True' as const,
      reason: 'Delivered',
      lastTransitionTime: 'x',
    };
    expect(notificationsLine(app({ phase: 'Healthy', conditions: [delivered] }))).toBe('');
  });

  it('counts pending ones and says why delivery is failing, as the condition does', () => {
    const retrying = {
      type: 'NotificationsDelivered',
      status: 'False' as const,
      reason: 'DeliveryRetrying',
      message: 'to hook: HTTP 503; retrying',
      lastTransitionTime: 'x',
    };
    const pending = [{ id: 'a', trigger: 'promoted' as const, destination: 'hook', at: 'x' }];
    expect(notificationsLine(app({ notifications: { pending }, conditions: [retrying] }))).toBe(
      'notifications: 1 pending; DeliveryRetrying: to hook: HTTP 503; retrying',
    );
  });
});
