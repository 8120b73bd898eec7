import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { CachedApp } from '../../src/controller/cache.ts';
import { PackedApp } from '../../src/controller/packed-app.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

// A converged App as the API server returns it, with this App's own name, times and hash.
function converged(i: number): CachedApp {
  const name = `app-${i}`;
  const hash = (0x1000000000 + i).toString(16);
  const at = new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString();
  const revision = {
    image: 'registry.example.com/bench/web:1',
    podTemplateHash: hash,
    replicaSet: `${name}-${hash}`,
    revision: 1,
  };
  const condition = (type: string, status: string, reason: string, message?: string) => ({
    lastTransitionTime: at,
    ...(message ? { message } : {}),
    observedGeneration: 1,
    reason,
    status,
    type,
  });
  return JSON.parse(
    JSON.stringify({
      apiVersion: 'teal.dev/v1alpha1',
      kind: 'App',
      metadata: { name, namespace: 'ns', resourceVersion: String(1000 + i), uid: `uid-${i}`, generation: 1 },
      spec: {
        image: 'registry.example.com/bench/web:1',
        paused: false,
        progressDeadlineSeconds: 600,
        replicas: 2,
        revisionHistoryLimit: 5,
        strategy: {
          blueGreen: {
            abortScaleDownDelaySeconds: 30,
            autoPromotionEnabled: false,
            autoPromotionSeconds: 0,
            previewReplicaCount: 2,
            scaleDownDelaySeconds: 0,
          },
        },
        template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 8080 }] }] } },
      },
      status: {
        HPAReplicas: 2,
        active: revision,
        availableReplicas: 2,
        conditions: [
          condition('InvalidSpec', 'False', 'Valid'),
          condition('PreviewAvailable', 'False', 'NoPreview'),
          condition('ProgressDeadlineExceeded', 'False', 'NotWaiting'),
          condition('AnalysisPassed', 'True', 'NoAnalysis', 'no checks stand before this revision'),
          condition('Aborted', 'False', 'NotAborted'),
          condition('Promoted', 'True', 'Promoted', 'revision 1 is active'),
          condition('Ready', 'True', 'Healthy', 'revision 1 is active'),
        ],
        history: [
          {
            createdAt: at.replace(/\.\d+Z$/, 'Z'),
            image: revision.image,
            podTemplateHash: hash,
            promotedAt: at,
            promotedBy: 'teal',
            promotedVia: 'first-release',
            revision: 1,
          },
        ],
        message: 'revision 1 is active',
        observedGeneration: 1,
        phase: 'Healthy',
        readyReplicas: 2,
        replicas: 2,
        selector: `teal.dev/app=${name},teal.dev/pod-template-hash=${hash}`,
        stable: revision,
        updatedReplicas: 2,
      },
    }),
  ) as CachedApp;
}

function heapOf(make: () => unknown[]): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept = make();
  gc();
  const used = process.memoryUsage().heapUsed - before;
  expect(kept.length).toBeGreaterThan(0);
  return used;
}

describe('PackedApp', () => {
  it('gives back the spec and status it was given, key order and all, and the metadata as it is', () => {
    const app = converged(7);
    const packed = new PackedApp(app);
    expect(JSON.stringify(packed.spec)).toBe(JSON.stringify(app.spec));
    expect(JSON.stringify(packed.status)).toBe(JSON.stringify(app.status));
    expect(packed.metadata).toBe(app.metadata);
    expect([packed.apiVersion, packed.kind]).toEqual(['teal.dev/v1alpha1', 'App']);
    expect(JSON.stringify(packed)).toBe(JSON.stringify(app));
  });

  it('packs any JSON, not only what the dictionary holds: long strings, unicode, nesting, no status', () => {
    const spec = {
      image: 'x'.repeat(5000),
      note: 'héllo ✓ 日本',
      deep: [[[{ a: null, b: -1.5, c: true }]]],
      empty: {},
    };
    const packed = new PackedApp({ metadata: { name: 'a', namespace: 'n', resourceVersion: '1' }, spec });
    expect(packed.spec).toEqual(spec);
    expect(packed.status).toBeUndefined();
    expect('status' in JSON.parse(JSON.stringify(packed))).toBe(false);
    expect(packed.apiVersion).toBeUndefined();
  });

  it('unpacks whole into a plain App, with one inflate for spec and status', () => {
    const app = converged(3);
    const plain = new PackedApp(app).unpacked();
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(JSON.stringify(plain)).toBe(JSON.stringify(app));
    expect(plain.metadata).toBe(app.metadata);
  });

  it('gives each reader its own copy: a change to one does not reach the cache', () => {
    const packed = new PackedApp(converged(1));
    (packed.status as { phase: string }).phase = 'Degraded';
    expect((packed.status as { phase: string }).phase).toBe('Healthy');
  });

  it('holds a converged App in well under half the heap of its parsed spec and status', () => {
    const parsed = heapOf(() => Array.from({ length: 1000 }, (_, i) => converged(i)));
    const packed = heapOf(() => Array.from({ length: 1000 }, (_, i) => new PackedApp(converged(i))));
    expect(packed).toBeLessThan(parsed / 2);
  });
});
