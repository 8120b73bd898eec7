// An App's spec and status as the cache holds them: their JSON, deflated
// against a dictionary of what every App's spec and status repeat (the
// defaults, the condition types and reasons, the field names), kept as a
// one-byte string. Parsed, a converged App's spec and status took about
// 1.6 KiB of heap, most of it objects and arrays every App has the same
// shape of (issue #14); packed they take about 0.15 KiB. Each read of spec or
// status inflates and parses them again (tens of microseconds), so a reader
// gets a fresh copy: the cache cannot be changed through it.
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { CachedApp } from './cache.ts';

const TIME = '2026-01-01T00:00:00.000Z';
const condition = (type: string, status: string, reason: string, message?: string) => ({
  lastTransitionTime: TIME,
  ...(message ? { message } : {}),
  observedGeneration: 1,
  reason,
  status,
  type,
});
const revision = {
  image: 'registry.example.com/app:1',
  podTemplateHash: '0123456789',
  replicaSet: 'app-0123456789',
  revision: 1,
};

/**
 * What a packed body is compared with: a converged App as Teal writes it,
 * in the API server's key order. Only the ratio depends on it: any JSON packs
 * and unpacks whole.
 */
const DICTIONARY = Buffer.from(
  JSON.stringify({
    spec: {
      image: revision.image,
      paused: false,
      progressDeadlineSeconds: 600,
      replicas: 2,
      revisionHistoryLimit: 5,
      source: { git: { url: 'https://', ref: 'main', pollInterval: '1m' } },
      strategy: {
        blueGreen: {
          abortScaleDownDelaySeconds: 30,
          activeService: 'app',
          autoPromotionEnabled: false,
          autoPromotionSeconds: 0,
          previewReplicaCount: 1,
          previewService: 'app-preview',
          scaleDownDelaySeconds: 30,
        },
      },
      template: {
        metadata: { labels: {}, annotations: {} },
        spec: {
          containers: [
            {
              env: [{ name: '', valueFrom: { secretKeyRef: { key: '', name: '' }, configMapKeyRef: {} } }],
              name: 'app',
              ports: [{ containerPort: 8080 }],
            },
          ],
        },
      },
    },
    status: {
      HPAReplicas: 2,
      abort: {},
      active: revision,
      availableReplicas: 2,
      build: { phase: 'Succeeded', commit: '', image: '', job: '' },
      conditions: [
        condition('InvalidSpec', 'False', 'Valid'),
        condition('PreviewAvailable', 'False', 'NoPreview'),
        condition('PreviewAvailable', 'True', 'Available', 'revision 2 is available on the preview Service'),
        condition('ProgressDeadlineExceeded', 'False', 'NotWaiting'),
        condition('AnalysisPassed', 'True', 'NoAnalysis', 'no checks stand before this revision'),
        condition('Aborted', 'False', 'NotAborted'),
        condition('Promoted', 'True', 'Promoted', 'revision 1 is active'),
        condition('Ready', 'True', 'Healthy', 'revision 1 is active'),
      ],
      handledIntents: { promote: '' },
      history: [
        {
          createdAt: '2026-01-01T00:00:00Z',
          image: revision.image,
          podTemplateHash: revision.podTemplateHash,
          promotedAt: TIME,
          promotedBy: 'teal',
          promotedVia: 'first-release',
          revision: 1,
        },
      ],
      message: 'revision 1 is active',
      observedGeneration: 1,
      phase: 'Healthy',
      preview: revision,
      promotion: {},
      readyReplicas: 2,
      replicas: 2,
      selector: 'teal.dev/app=app,teal.dev/pod-template-hash=0123456789',
      source: { commit: '', ref: '' },
      stable: revision,
      updatedReplicas: 2,
    },
  }),
);

// A small window and level 1: packing runs at every App event, and the dictionary fits the window.
const OPTIONS = { dictionary: DICTIONARY, windowBits: 13, memLevel: 5, level: 1 } as const;

interface Body {
  spec?: unknown;
  status?: unknown;
}

function pack(body: Body): string {
  return deflateRawSync(JSON.stringify(body), OPTIONS).toString('latin1');
}

function unpack(packed: string): Body {
  return JSON.parse(inflateRawSync(Buffer.from(packed, 'latin1'), OPTIONS).toString('utf8')) as Body;
}

/** A cached App whose spec and status are packed (see above); the metadata stays as it is. */
export class PackedApp implements CachedApp {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: CachedApp['metadata'];
  readonly #body: string;

  constructor(app: CachedApp) {
    if (app.apiVersion !== undefined) this.apiVersion = app.apiVersion;
    if (app.kind !== undefined) this.kind = app.kind;
    this.metadata = app.metadata;
    this.#body = pack({ spec: app.spec, status: app.status });
  }

  get spec(): unknown {
    return unpack(this.#body).spec;
  }

  get status(): unknown {
    return unpack(this.#body).status;
  }

  /** The App as a plain object, as it was before packing, from one inflate rather than one per field read. */
  unpacked(): CachedApp {
    const { spec, status } = unpack(this.#body);
    return {
      ...(this.apiVersion !== undefined ? { apiVersion: this.apiVersion } : {}),
      ...(this.kind !== undefined ? { kind: this.kind } : {}),
      metadata: this.metadata,
      ...(spec !== undefined ? { spec } : {}),
      ...(status !== undefined ? { status } : {}),
    };
  }

  /** What JSON.stringify writes: the plain App (getters are not own properties). */
  toJSON(): CachedApp {
    return this.unpacked();
  }
}
