// Every label and annotation Teal reads back from the cluster is parsed into
// the shape Teal writes; anything else is treated as absent and reported with
// the object, the key and why.
import { describe, expect, it } from 'vitest';
import { positiveInteger, rfc3339Time, selectorJson, shown } from '../../src/app/cluster-values.ts';
import { intentAnnotation, readIntents, readRefreshRequest } from '../../src/app/intents.ts';
import {
  ANN_APPLIED,
  ANN_COMMIT,
  ANN_IMAGE,
  ANN_ORIGINAL_SELECTOR,
  ANN_REVISION,
  ANN_SCALE_DOWN_AT,
  LABEL_APP,
  LABEL_HASH,
} from '../../src/app/labels.ts';
import { observeBuildPod, observeJob } from '../../src/build/observed.ts';
import { observeReplicaSet, observeService } from '../../src/rollout/observed.ts';

const HASH = '5d8f7c9b6a';
const COMMIT = 'a'.repeat(40);
const LONG = 'x'.repeat(5000);

/** A ReplicaSet as Teal writes it, with edits to its labels and annotations. */
function replicaSet(labels: Record<string, string> = {}, annotations: Record<string, string> = {}) {
  return {
    metadata: {
      name: `web-${HASH}`,
      namespace: 'ns',
      resourceVersion: '7',
      labels: { [LABEL_APP]: 'web', [LABEL_HASH]: HASH, ...labels },
      annotations: {
        [ANN_REVISION]: '3',
        [ANN_IMAGE]: 'registry.example.com/team/web:2',
        [ANN_COMMIT]: COMMIT,
        [ANN_SCALE_DOWN_AT]: '2026-11-21T10:00:30.000Z',
        ...annotations,
      },
    },
    spec: { replicas: 2, selector: { matchLabels: { [LABEL_APP]: 'web', [LABEL_HASH]: HASH } } },
    status: { replicas: 2, availableReplicas: 2, readyReplicas: 2, observedGeneration: 1 },
  };
}

function service(labels: Record<string, string> = {}, annotations: Record<string, string> = {}, hash = HASH) {
  return {
    metadata: {
      name: 'web',
      namespace: 'ns',
      resourceVersion: '8',
      labels: { [LABEL_APP]: 'web', ...labels },
      annotations: { [ANN_APPLIED]: '0123456789', ...annotations },
    },
    spec: { selector: { [LABEL_APP]: 'web', [LABEL_HASH]: hash } },
  };
}

describe('value parsers', () => {
  it('rfc3339Time takes RFC 3339 times only, as epoch milliseconds', () => {
    expect(rfc3339Time.parse('2026-11-21T10:00:30.000Z')).toBe(Date.parse('2026-11-21T10:00:30Z'));
    expect(rfc3339Time.parse('2026-11-21T12:00:30+02:00')).toBe(Date.parse('2026-11-21T10:00:30Z'));
    expect(rfc3339Time.parse('2024-02-29T00:00:00Z')).toBe(Date.parse('2024-02-29T00:00:00Z'));
    for (const bad of [
      'not-a-time',
      '',
      '1732183230',
      '2026-11-21',
      '2026-11-21 10:00:30',
      '2026-11-21T10:00:30',
      '2025-02-29T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-11-21T24:00:00Z',
      '+275760-09-14T00:00:00Z',
      `2026-11-21T10:00:30.${'0'.repeat(50)}Z`,
    ]) {
      expect(rfc3339Time.parse(bad), bad).toBeUndefined();
    }
  });

  it('positiveInteger takes decimal integers from 1 to MAX_SAFE_INTEGER', () => {
    expect(positiveInteger.parse('1')).toBe(1);
    expect(positiveInteger.parse('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    for (const bad of ['0', '-1', '1.5', '1e3', '01', ' 1', '0x10', '9007199254740993', '99999999999999999999', '']) {
      expect(positiveInteger.parse(bad), bad).toBeUndefined();
    }
  });

  it('selectorJson takes a JSON object of label keys to label values', () => {
    expect(selectorJson.parse('{"app":"web","example.com/tier":"front"}')).toBeDefined();
    expect(selectorJson.parse('{}')).toBeDefined();
    for (const bad of ['{', '[]', '"web"', 'null', '{"app":1}', '{"app":"a b"}', '{"-bad":"x"}', `{"app":"${LONG}"}`]) {
      expect(selectorJson.parse(bad), bad).toBeUndefined();
    }
  });

  it('shown quotes a value, escapes control characters and cuts a long one short', () => {
    expect(shown('not-a-time')).toBe('"not-a-time"');
    expect(shown('a\nb\u0000')).toBe('"a\\nb\\u0000"');
    expect(shown(LONG)).toBe(`"${'x'.repeat(64)}…" (5000 characters)`);
  });
});

describe('observeReplicaSet', () => {
  it('reads what Teal writes, with no problems', () => {
    const rs = observeReplicaSet(replicaSet());
    expect(rs).toMatchObject({
      app: 'web',
      hash: HASH,
      revision: 3,
      image: 'registry.example.com/team/web:2',
      commit: COMMIT,
      scaleDownAt: '2026-11-21T10:00:30.000Z',
    });
    expect(rs?.problems).toBeUndefined();
  });

  it.each<[string, string, string, { absent?: string[]; revision?: number; image?: string }]>([
    [ANN_SCALE_DOWN_AT, 'not-a-time', 'an RFC 3339 time', { absent: ['scaleDownAt'] }],
    [ANN_SCALE_DOWN_AT, '', 'an RFC 3339 time', { absent: ['scaleDownAt'] }],
    [ANN_REVISION, 'three', 'a positive integer', { revision: 0 }],
    [ANN_REVISION, '1e400', 'a positive integer', { revision: 0 }],
    [ANN_REVISION, '-2', 'a positive integer', { revision: 0 }],
    [ANN_IMAGE, 'not an image!', 'an image reference', { image: '' }],
    [ANN_COMMIT, 'HEAD', 'a commit SHA of 40 lowercase hex digits', { absent: ['commit'] }],
  ])('treats annotation %s=%j as absent and reports it', (key, value, expected, { absent = [], ...fields }) => {
    const rs = observeReplicaSet(replicaSet({}, { [key]: value }));
    expect(rs).toMatchObject({ hash: HASH, ...fields });
    for (const field of absent) expect(rs).not.toHaveProperty(field);
    expect(rs?.problems).toEqual([
      {
        reason: 'InvalidAnnotation',
        message: `ReplicaSet web-${HASH}: annotation ${key}=${JSON.stringify(value)} is not ${expected}; Teal ignores it`,
      },
    ]);
  });

  it('never echoes a huge value', () => {
    const rs = observeReplicaSet(replicaSet({}, { [ANN_SCALE_DOWN_AT]: LONG }));
    const message = rs?.problems?.[0]?.message ?? '';
    expect(message).toContain('(5000 characters)');
    expect(message.length).toBeLessThan(250);
  });

  it('takes the App and hash from the selector, which cannot change, and reports a label that differs', () => {
    const rs = observeReplicaSet(replicaSet({ [LABEL_HASH]: 'garbage', [LABEL_APP]: 'Not_An_App' }));
    expect(rs).toMatchObject({ app: 'web', hash: HASH });
    expect(rs?.problems?.map((p) => p.reason)).toEqual(['InvalidLabel', 'InvalidLabel']);
    expect(rs?.problems?.[1]?.message).toBe(
      `ReplicaSet web-${HASH}: label ${LABEL_HASH}="garbage" differs from "${HASH}" in its selector; Teal ignores it`,
    );
  });

  it('is not Teal’s when neither the label nor the selector holds a hash', () => {
    const raw = replicaSet({ [LABEL_HASH]: 'garbage' });
    raw.spec.selector.matchLabels = { [LABEL_APP]: 'web', [LABEL_HASH]: 'other' };
    expect(observeReplicaSet(raw)).toBeUndefined();
  });
});

describe('observeService', () => {
  it('reads what Teal writes, with no problems', () => {
    const svc = observeService(service({}, { [ANN_ORIGINAL_SELECTOR]: '{"app":"web"}' }));
    expect(svc).toMatchObject({ app: 'web', appliedHash: '0123456789', originalSelector: '{"app":"web"}' });
    expect(svc?.selector[LABEL_HASH]).toBe(HASH);
    expect(svc?.problems).toBeUndefined();
    expect(observeService(service({}, {}, 'none'))?.selector[LABEL_HASH]).toBe('none');
  });

  it('treats a bad App label, applied hash, original selector or selected hash as absent, one problem each', () => {
    const svc = observeService(
      service({ [LABEL_APP]: 'Not_An_App' }, { [ANN_APPLIED]: 'zz', [ANN_ORIGINAL_SELECTOR]: '["app"]' }, 'garbage'),
    );
    expect(svc).not.toHaveProperty('app');
    expect(svc).not.toHaveProperty('appliedHash');
    expect(svc).not.toHaveProperty('originalSelector');
    expect(svc?.selector).toEqual({ [LABEL_APP]: 'web' });
    expect(svc?.problems).toEqual([
      {
        reason: 'InvalidLabel',
        message:
          'Service web: label teal.dev/app="Not_An_App" is not an object name (DNS-1123, at most 63 characters); Teal ignores it',
      },
      {
        reason: 'InvalidAnnotation',
        message:
          'Service web: annotation teal.dev/original-selector="[\\"app\\"]" is not a JSON object of label keys to label values; Teal ignores it',
      },
      {
        reason: 'InvalidAnnotation',
        message:
          'Service web: annotation teal.dev/applied="zz" is not a hash of 10 lowercase hex digits; Teal ignores it',
      },
      {
        reason: 'InvalidSelector',
        message:
          'Service web: selector teal.dev/pod-template-hash="garbage" is not a hash of 10 lowercase hex digits; Teal ignores it',
      },
    ]);
  });
});

describe('build Jobs and pods', () => {
  const labels = {
    [LABEL_APP]: 'web',
    'teal.dev/build': COMMIT.slice(0, 12),
    'teal.dev/commit': COMMIT,
    'teal.dev/build-spec': 'abcde',
  };
  const job = (edits: Record<string, string>) => ({
    metadata: { name: 'web-build-x', namespace: 'ns', labels: { ...labels, ...edits } },
    spec: { template: { metadata: { labels } } },
  });

  it('take the App, commit and build settings from the pod template, which cannot change', () => {
    const observed = observeJob(
      job({ [LABEL_APP]: 'other', 'teal.dev/commit': 'HEAD', 'teal.dev/build-spec': 'not-a-hash' }),
    );
    expect(observed).toMatchObject({ app: 'web', commit: COMMIT, buildSpec: 'abcde' });
    expect(observed?.problems?.map((p) => p.message)).toEqual([
      'Job web-build-x: label teal.dev/app="other" differs from "web" in its pod template; Teal ignores it',
      `Job web-build-x: label teal.dev/commit="HEAD" differs from "${COMMIT}" in its pod template; Teal ignores it`,
      'Job web-build-x: label teal.dev/build-spec="not-a-hash" differs from "abcde" in its pod template; Teal ignores it',
    ]);
    expect(observeJob(job({}))?.problems).toBeUndefined();
  });

  it('a build pod belongs to the Job its controller reference names, and keeps only a termination message’s tail', () => {
    const pod = observeBuildPod({
      metadata: {
        name: 'web-build-x-abcde',
        namespace: 'ns',
        labels: { ...labels, 'job-name': 'elsewhere' },
        ownerReferences: [{ kind: 'Job', name: 'web-build-x', controller: true }],
      },
      status: {
        phase: 'Failed',
        containerStatuses: [{ name: 'build', state: { terminated: { exitCode: 1, message: `${LONG}\nlast line` } } }],
      },
    });
    expect(pod).toMatchObject({ job: 'web-build-x' });
    expect(pod?.message?.length).toBe(4096);
    expect(pod?.message?.endsWith('\nlast line')).toBe(true);
    expect(pod?.problems?.[0]?.message).toBe(
      'Pod web-build-x-abcde: label job-name="elsewhere" differs from "web-build-x" in its owner reference; Teal ignores it',
    );
  });
});

describe('App annotations', () => {
  const good = { id: '1', by: 'me', via: 'kubectl', at: '2026-11-21T10:00:00Z' };

  it('an intent that is not JSON, or not an intent, is ignored and reported', () => {
    const { intents, problems } = readIntents(
      {
        [intentAnnotation('promote')]: '{not json',
        [intentAnnotation('abort')]: JSON.stringify({ ...good, at: 'yesterday' }),
        [intentAnnotation('pause')]: JSON.stringify(good),
      },
      'App web',
    );
    expect(intents.map((i) => i.action)).toEqual(['pause']);
    expect(problems).toEqual([
      {
        reason: 'InvalidAnnotation',
        message: 'App web: annotation intents.teal.dev/promote="{not json" is not JSON; Teal ignores it',
      },
      {
        reason: 'InvalidAnnotation',
        message: expect.stringMatching(
          /^App web: annotation intents\.teal\.dev\/abort=".*" is not an intent \(at: must be an RFC 3339 time\); Teal ignores it$/,
        ),
      },
    ]);
  });

  it('an intent carrying an argument its action does not take is ignored and reported, as the API refuses it', () => {
    const { intents, problems } = readIntents(
      {
        [intentAnnotation('abort')]: JSON.stringify({ ...good, revision: 2 }),
        [intentAnnotation('promote')]: JSON.stringify({ ...good, toRevision: 1, force: true }),
        [intentAnnotation('undo')]: JSON.stringify({ ...good, toRevision: 1 }),
      },
      'App web',
    );
    expect(intents.map((i) => i.action)).toEqual(['undo']);
    expect(problems.map((p) => p.message)).toEqual([
      expect.stringMatching(
        /^App web: annotation intents\.teal\.dev\/promote=.* is not an intent \(promote takes no "toRevision", "force"\); Teal ignores it$/,
      ),
      expect.stringMatching(
        /^App web: annotation intents\.teal\.dev\/abort=.* is not an intent \(abort takes no "revision"\); Teal ignores it$/,
      ),
    ]);
  });

  it('a refresh request that is not a time is ignored and reported', () => {
    expect(readRefreshRequest({ 'teal.dev/refresh-requested-at': '2026-11-21T10:00:00+00:00' })).toEqual({
      at: Date.parse('2026-11-21T10:00:00Z'),
      problems: [],
    });
    expect(readRefreshRequest({ 'teal.dev/refresh-requested-at': 'now please' }, 'App web')).toEqual({
      problems: [
        {
          reason: 'InvalidAnnotation',
          message:
            'App web: annotation teal.dev/refresh-requested-at="now please" is not an RFC 3339 time; Teal ignores it',
        },
      ],
    });
  });
});
