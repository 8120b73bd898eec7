// The dashboard's row of an App (src/app/dashboard-row.ts): what the Apps table
// and its "waiting for me" filter read, small whatever the App holds.
import { describe, expect, it } from 'vitest';
import { awaitsPromotion, dashboardRow, MESSAGE_LIMIT, waitingFor } from '../../src/app/dashboard-row.ts';
import type { AppStatus } from '../../src/app/schema.ts';
import { readAppStatus } from '../../src/app/status-reader.ts';
import { analysisRun, revisionStatus } from '../fixtures/app-status.ts';

const metadata = { namespace: 'shop', name: 'web', resourceVersion: '41' };
const withChecks = { strategy: { blueGreen: { prePromotionAnalysis: { checks: [] } } } };

describe('the dashboard row', () => {
  it('holds the namespace, name, version, phase, message and revisions; what is missing as empty', () => {
    const status: AppStatus = {
      phase: 'Healthy',
      message: 'revision 7 is active',
      active: revisionStatus(7),
    };
    expect(dashboardRow({ metadata, status })).toEqual({
      namespace: 'shop',
      name: 'web',
      version: '41',
      phase: 'Healthy',
      message: 'revision 7 is active',
      active: 7,
    });
    expect(dashboardRow({ metadata: { ...metadata, deletionTimestamp: '2026-01-01T00:00:00Z' }, status: {} })).toEqual({
      namespace: 'shop',
      name: 'web',
      version: '41',
      phase: '',
      message: '',
      deleting: true,
    });
  });

  it('says whether the preview waits only for a promote: no checks, or its own checks passed', () => {
    const preview = revisionStatus(3);
    const base: AppStatus = { active: revisionStatus(2), preview };
    const run = (phase: 'Running' | 'Successful' | 'Failed', n = 3) =>
      analysisRun(n, '2026-01-01T00:00:00Z', { phase });
    const row = (status: AppStatus, spec: unknown = withChecks) => dashboardRow({ metadata, status, spec });
    expect(row(base, {}).previewChecks).toBe('none');
    expect(row(base).previewChecks).toBe('running');
    expect(row({ ...base, prePromotionAnalysis: run('Running') }).previewChecks).toBe('running');
    expect(row({ ...base, prePromotionAnalysis: run('Successful') }).previewChecks).toBe('passed');
    expect(row({ ...base, prePromotionAnalysis: run('Failed') }).previewChecks).toBe('failed');
    // A run of another revision says nothing of this one.
    expect(row({ ...base, prePromotionAnalysis: run('Successful', 2) }).previewChecks).toBe('running');
    expect(row({ active: revisionStatus(2) }).previewChecks).toBeUndefined();

    expect(awaitsPromotion(row(base, {}))).toBe(true);
    expect(awaitsPromotion(row({ ...base, prePromotionAnalysis: run('Successful') }))).toBe(true);
    expect(awaitsPromotion(row(base))).toBe(false);
    expect(awaitsPromotion(row({ active: revisionStatus(2) }))).toBe(false);
  });

  it('stays small: a long message is cut, and a status of any content is read leniently', () => {
    const status = readAppStatus({ phase: 'Degraded', message: 'x'.repeat(10_000), active: { revision: 'nope' } });
    const row = dashboardRow({ metadata, status, spec: 'not an object' });
    expect(row.message).toHaveLength(MESSAGE_LIMIT);
    expect(row.message.endsWith('…')).toBe(true);
    expect(row.active).toBeUndefined();
    const full = dashboardRow({
      metadata: { namespace: 'a'.repeat(63), name: 'b'.repeat(53), resourceVersion: '1234567890' },
      status: { phase: 'Paused', message: 'y'.repeat(500), active: revisionStatus(2), preview: revisionStatus(3) },
      spec: withChecks,
    });
    expect(Buffer.byteLength(JSON.stringify(full))).toBeLessThan(520);
  });
});

describe('waiting for me', () => {
  it('is a row awaiting a promote in a namespace where the user may promote, and nothing else', () => {
    const promoteIn = new Set(['shop']);
    expect(waitingFor({ namespace: 'shop', awaitsPromotion: true }, promoteIn)).toBe(true);
    expect(waitingFor({ namespace: 'shop', awaitsPromotion: false }, promoteIn)).toBe(false);
    expect(waitingFor({ namespace: 'blog', awaitsPromotion: true }, promoteIn)).toBe(false);
    expect(waitingFor({ namespace: 'shop', awaitsPromotion: true }, new Set())).toBe(false);
  });
});
