// Configuration as part of the revision (src/rollout/config-refs.ts): which
// references a pod template makes, how the revision's template points them at
// per-App copies named after their content, what stays live, and which copies
// go with the ReplicaSets deleted; then the same through the planner.
import { describe, expect, it } from 'vitest';
import { podTemplateHash } from '../../src/app/hash.ts';
import { plan } from '../../src/rollout/bluegreen.ts';
import {
  ANN_CONFIG_COPIES,
  CONFIG_RECHECK_MS,
  configMapDigest,
  configureTemplate,
  copiesFreedBy,
  copiesInUse,
  copyName,
  copySource,
  findConfigRefs,
  parseLiveConfig,
  recheckAfterMs,
  repairCopies,
  type SourceState,
  secretDigest,
  secretsDue,
  sourcesToRead,
} from '../../src/rollout/config-refs.ts';
import { type ObservedReplicaSet, observeReplicaSet } from '../../src/rollout/observed.ts';
import { configuredRevision } from '../../src/rollout/target.ts';
import { makeApp, T0 } from '../support/planner-world.ts';

const podSpec = {
  volumes: [
    { name: 'conf', configMap: { name: 'conf' } },
    { name: 'tls', secret: { secretName: 'tls', optional: true } },
    {
      name: 'all',
      projected: { sources: [{ configMap: { name: 'extra' } }, { secret: { name: 'token' } }, { downwardAPI: {} }] },
    },
    { name: 'scratch', emptyDir: {} },
  ],
  initContainers: [{ name: 'init', envFrom: [{ configMapRef: { name: 'conf' } }] }],
  containers: [
    {
      name: 'app',
      envFrom: [{ secretRef: { name: 'db' } }],
      env: [
        { name: 'A', value: 'x' },
        { name: 'B', valueFrom: { configMapKeyRef: { name: 'flags', key: 'b', optional: true } } },
        { name: 'C', valueFrom: { secretKeyRef: { name: 'api', key: 'c' } } },
        { name: 'D', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ],
    },
  ],
};

const template = () => ({ spec: structuredClone(podSpec) as typeof podSpec & { containers: { name: string }[] } });
const found = (digest: string): SourceState => ({ digest });

function allFound(except: string[] = []): Map<string, SourceState> {
  const keys = [
    'configmap/conf',
    'secret/tls',
    'configmap/extra',
    'secret/token',
    'secret/db',
    'configmap/flags',
    'secret/api',
  ];
  return new Map(keys.map((k) => [k, except.includes(k) ? 'missing' : found(`d-${k}`)]));
}

describe('findConfigRefs', () => {
  it('finds volumes, projected sources, envFrom and valueFrom, in init containers too, with where and optional', () => {
    const refs = findConfigRefs(podSpec);
    expect(refs.map((r) => `${r.kind}/${r.name}${r.optional ? '?' : ''} ${r.field}`)).toEqual([
      'configmap/conf spec.template.spec.volumes[0].configMap.name',
      'secret/tls? spec.template.spec.volumes[1].secret.secretName',
      'configmap/extra spec.template.spec.volumes[2].projected.sources[0].configMap.name',
      'secret/token spec.template.spec.volumes[2].projected.sources[1].secret.name',
      'configmap/conf spec.template.spec.initContainers[0].envFrom[0].configMapRef.name',
      'secret/db spec.template.spec.containers[0].envFrom[0].secretRef.name',
      'configmap/flags? spec.template.spec.containers[0].env[1].valueFrom.configMapKeyRef.name',
      'secret/api spec.template.spec.containers[0].env[2].valueFrom.secretKeyRef.name',
    ]);
  });

  it('reads each source once, and not the opted-out ones; a template without references reads nothing', () => {
    const live = parseLiveConfig('secret/db, configmap/conf').live;
    expect(sourcesToRead(podSpec, live).map((s) => `${s.kind}/${s.name}`)).toEqual([
      'secret/tls',
      'configmap/extra',
      'secret/token',
      'configmap/flags',
      'secret/api',
    ]);
    expect(sourcesToRead({ containers: [{ name: 'app' }] }, new Set())).toEqual([]);
  });

  it('ignores what is not a reference (odd shapes from a loose pod spec)', () => {
    expect(findConfigRefs({ volumes: [null, { configMap: { name: '' } }, { secret: 'x' }], containers: 'no' })).toEqual(
      [],
    );
  });
});

describe('parseLiveConfig', () => {
  it('reads configmap/NAME and secret/NAME entries and names any other', () => {
    const { live, problems } = parseLiveConfig(' configmap/a ,secret/b.c,,deployment/x,secret/UPPER');
    expect([...live]).toEqual(['configmap/a', 'secret/b.c']);
    expect(problems).toEqual([
      'metadata.annotations["teal.dev/live-config"]: "deployment/x" is not configmap/NAME or secret/NAME',
      'metadata.annotations["teal.dev/live-config"]: "secret/UPPER" is not configmap/NAME or secret/NAME',
    ]);
    expect(parseLiveConfig(undefined)).toEqual({ live: new Set(), problems: [] });
  });
});

describe('digests and copy names', () => {
  it('names a copy after the App and the content: another App, or other content, is another copy', () => {
    const d1 = configMapDigest({ a: '1', b: '2' }, undefined);
    expect(configMapDigest({ b: '2', a: '1' }, {})).toBe(d1);
    expect(configMapDigest({ a: '1', b: '3' }, undefined)).not.toBe(d1);
    expect(copyName('uid-1', 'conf', d1)).toMatch(/^conf-[0-9a-f]{10}$/);
    expect(copyName('uid-2', 'conf', d1)).not.toBe(copyName('uid-1', 'conf', d1));
    expect(copyName('uid-1', 'x'.repeat(253), d1).length).toBe(253);
  });

  it("keys a Secret's digest with its uid: the same value in another Secret hashes differently", () => {
    const data = { password: Buffer.from('hunter2').toString('base64') };
    const d = secretDigest('app', 's1', 'Opaque', data);
    expect(secretDigest('app', 's1', 'Opaque', data)).toBe(d);
    expect(secretDigest('app', 's2', 'Opaque', data)).not.toBe(d);
    expect(secretDigest('app', 's1', 'kubernetes.io/tls', data)).not.toBe(d);
    // An unkeyed hash of the value is not it.
    expect(d).not.toContain(configMapDigest(data, undefined).slice(0, 10));
  });
});

describe('configureTemplate', () => {
  it('points every reference at its copy, each copy listed once; the App template is left as it was', () => {
    const t = template();
    const out = configureTemplate(t, 'uid-1', allFound(), new Set());
    expect(out.problems).toEqual([]);
    expect(t).toEqual(template());
    const conf = copyName('uid-1', 'conf', 'd-configmap/conf');
    expect(out.template.spec.volumes[0]?.configMap?.name).toBe(conf);
    expect(out.template.spec.initContainers[0]?.envFrom[0]?.configMapRef.name).toBe(conf);
    expect(out.template.spec.volumes[1]?.secret?.secretName).toBe(copyName('uid-1', 'tls', 'd-secret/tls'));
    expect(out.template.spec.volumes[1]?.secret?.optional).toBe(true);
    expect(out.copies.map((c) => `${c.kind}/${c.source}`)).toEqual([
      'configmap/conf',
      'secret/tls',
      'configmap/extra',
      'secret/token',
      'secret/db',
      'configmap/flags',
      'secret/api',
    ]);
  });

  it('leaves opted-out references and optional missing ones live; a required missing one names its field', () => {
    const out = configureTemplate(
      template(),
      'uid-1',
      allFound(['configmap/flags', 'secret/api']),
      parseLiveConfig('secret/db').live,
    );
    const app = out.template.spec.containers[0];
    expect(app?.envFrom[0]?.secretRef.name).toBe('db');
    expect(app?.env[1]?.valueFrom?.configMapKeyRef?.name).toBe('flags');
    expect(out.copies.map((c) => c.source)).not.toContain('db');
    expect(out.problems).toEqual([
      'spec.template.spec.containers[0].env[2].valueFrom.secretKeyRef.name: Secret "api" not found',
    ]);
  });
});

describe('configuredRevision', () => {
  const base = { hash: podTemplateHash('img:1', template()), image: 'img:1' };

  it('is the revision as before when nothing is copied: Apps without references keep their hash', () => {
    const none = configureTemplate({ spec: { containers: [{ name: 'app' }] } }, 'u', new Map(), new Set());
    expect(configuredRevision(base, none)).toBe(base);
    expect(configuredRevision(undefined, none)).toBeUndefined();
  });

  it('a change of content is a new hash; the same content the same hash', () => {
    const one = configuredRevision(base, configureTemplate(template(), 'u', allFound(), new Set()));
    const again = configuredRevision(base, configureTemplate(template(), 'u', allFound(), new Set()));
    const changed = new Map(allFound());
    changed.set('configmap/conf', found('other'));
    const two = configuredRevision(base, configureTemplate(template(), 'u', changed, new Set()));
    expect(one?.hash).toMatch(/^[0-9a-f]{10}$/);
    expect(one?.hash).not.toBe(base.hash);
    expect(again?.hash).toBe(one?.hash);
    expect(two?.hash).not.toBe(one?.hash);
  });
});

describe('copiesFreedBy', () => {
  it('frees a copy only when no other ReplicaSet, nor the revision to make, references it', () => {
    const deleted = [{ name: 'rs1', copies: ['configmap/a-1', 'configmap/shared-1', 'secret/s-1', 'secret/next-1'] }];
    const all = [...deleted, { name: 'rs2', copies: ['configmap/shared-1'] }, { name: 'rs3' }];
    const wanted = [{ kind: 'secret' as const, source: 'next', name: 'next-1' }];
    expect(copiesFreedBy(deleted, all, wanted)).toEqual([
      { kind: 'configmap', name: 'a-1' },
      { kind: 'secret', name: 's-1' },
    ]);
  });
});

describe('through the planner', () => {
  const rs = (hash: string, revision: number, copies: string[]): ObservedReplicaSet => ({
    namespace: 'ns',
    name: `web-${hash}`,
    resourceVersion: '1',
    app: 'web',
    hash,
    revision,
    image: 'img:1',
    createdAt: '',
    generation: 1,
    specReplicas: 0,
    observedGeneration: 1,
    replicas: 0,
    readyReplicas: 0,
    availableReplicas: 0,
    deleting: false,
    copies,
  });

  it('makes the copies before the ReplicaSet that references them, and lists them on it', () => {
    const app = makeApp((a) => {
      a.spec.template.spec = { containers: [{ name: 'app', envFrom: [{ configMapRef: { name: 'conf' } }] }] } as never;
    });
    const configured = configureTemplate(app.spec.template, 'uid-1', allFound(), new Set());
    const target = configuredRevision(
      { hash: podTemplateHash('img:1', app.spec.template), image: 'img:1' },
      configured,
    );
    const planned = plan({ app, observed: { replicaSets: [] }, now: new Date(T0), target, intents: [] });
    expect(planned.actions.map((a) => a.kind).slice(0, 2)).toEqual(['createConfigCopy', 'createReplicaSet']);
    const create = planned.actions[1];
    if (create?.kind !== 'createReplicaSet') throw new Error('no ReplicaSet');
    const copy = copyName('uid-1', 'conf', 'd-configmap/conf');
    expect(create.manifest.metadata.annotations[ANN_CONFIG_COPIES as 'teal.dev/revision']).toBe(`configmap/${copy}`);
    const spec = create.manifest.spec.template.spec as typeof podSpec;
    expect(spec.containers[0]?.envFrom[0]).toEqual({ configMapRef: { name: copy } });
    expect(create.manifest.spec.template.spec.containers[0]?.image).toBe('img:1');
  });

  it('deletes the copies only an old ReplicaSet beyond revisionHistoryLimit had, then it', () => {
    const app = makeApp((a) => {
      a.spec.revisionHistoryLimit = 0;
      a.spec.image = 'img:1';
    });
    const target = { hash: 'cccccccccc', image: 'img:1' };
    const serving = { ...rs('cccccccccc', 3, ['configmap/b-2']), specReplicas: 3, replicas: 3, availableReplicas: 3 };
    const old = rs('aaaaaaaaaa', 1, ['configmap/a-1', 'configmap/b-2', 'secret/s-1']);
    const planned = plan({
      app: {
        ...app,
        status: {
          active: { revision: 3, image: 'img:1', podTemplateHash: 'cccccccccc', replicaSet: 'web-cccccccccc' },
        },
      },
      observed: { replicaSets: [old, serving] },
      now: new Date(T0),
      target,
      intents: [],
    });
    const writes = planned.actions.filter((a) => a.kind === 'deleteConfigCopy' || a.kind === 'deleteReplicaSet');
    expect(writes).toEqual([
      { kind: 'deleteConfigCopy', copyKind: 'configmap', name: 'a-1', appUid: 'uid-1' },
      { kind: 'deleteConfigCopy', copyKind: 'secret', name: 's-1', appUid: 'uid-1' },
      { kind: 'deleteReplicaSet', name: 'web-aaaaaaaaaa' },
    ]);
  });

  it("reads a ReplicaSet's copies back, leaving out what is not of Teal's shape", () => {
    const observed = observeReplicaSet({
      metadata: {
        name: 'web-aaaaaaaaaa',
        namespace: 'ns',
        labels: { 'teal.dev/app': 'web', 'teal.dev/pod-template-hash': 'aaaaaaaaaa' },
        annotations: { [ANN_CONFIG_COPIES]: 'configmap/a-1,bogus,secret/s-1,secret/../x' },
      },
      spec: { selector: { matchLabels: { 'teal.dev/app': 'web', 'teal.dev/pod-template-hash': 'aaaaaaaaaa' } } },
    });
    expect(observed?.copies).toEqual(['configmap/a-1', 'secret/s-1']);
  });
});

describe('when Secrets are read again', () => {
  const known = { readAt: T0, names: new Set(['db', 'api']) };

  it('reads them when never read, once the interval is over, or when the template names a new one', () => {
    expect(secretsDue(undefined, ['db'], T0)).toBe(true);
    expect(secretsDue(known, ['db', 'api'], T0 + CONFIG_RECHECK_MS - 1)).toBe(false);
    expect(secretsDue(known, ['db'], T0 + CONFIG_RECHECK_MS)).toBe(true);
    expect(secretsDue(known, ['db', 'tls'], T0 + 1)).toBe(true);
  });

  it('wakes the App exactly when they are due, however often it reconciles meanwhile', () => {
    expect(recheckAfterMs(T0, T0)).toBe(CONFIG_RECHECK_MS + 1);
    expect(recheckAfterMs(T0, T0 + 10_000)).toBe(CONFIG_RECHECK_MS - 10_000 + 1);
    expect(secretsDue(known, ['db'], T0 + recheckAfterMs(T0, T0 + 10_000) + 10_000)).toBe(true);
    expect(recheckAfterMs(T0, T0 + CONFIG_RECHECK_MS * 2)).toBe(1);
  });
});

describe('copies in use deleted by hand (issue #24 S5)', () => {
  it("reads a copy's source back from its name, as copyName made it", () => {
    expect(copySource(copyName('uid-1', 'conf', 'd'))).toBe('conf');
    expect(copySource(copyName('uid-1', 'my-conf-0123456789', 'd'))).toBe('my-conf-0123456789');
    expect(copySource('conf')).toBeUndefined();
  });

  it('takes the copies of ReplicaSets that run pods, each once, not those scaled to zero or being deleted', () => {
    const rs = (copies: string[], specReplicas: number, deleting = false) => ({ copies, specReplicas, deleting });
    expect(
      copiesInUse([
        rs(['configmap/a-0123456789', 'secret/b-0123456789'], 3),
        rs(['configmap/a-0123456789'], 1),
        rs(['configmap/old-0123456789'], 0),
        rs(['configmap/going-0123456789'], 3, true),
      ]),
    ).toEqual([
      { kind: 'configmap', name: 'a-0123456789' },
      { kind: 'secret', name: 'b-0123456789' },
    ]);
  });

  it('remakes a copy only while its source has the content it is named after', () => {
    const name = copyName('uid-1', 'conf', 'd1');
    const same = { kind: 'configmap' as const, name, source: 'conf', state: { digest: 'd1' } };
    const moved = { ...same, state: { digest: 'd2' } };
    const gone = { ...same, state: 'missing' as const };
    const unknown = { kind: 'configmap' as const, name: 'x', state: { digest: 'd1' } };
    expect(repairCopies('uid-1', [same, moved, gone, unknown])).toEqual({
      recreate: [{ kind: 'configmap', source: 'conf', name }],
      lost: [moved, gone, unknown],
    });
    // Another App's copy of the same content has another name: not this App's to remake.
    expect(repairCopies('uid-2', [same]).recreate).toEqual([]);
  });
});
