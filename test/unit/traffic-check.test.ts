// The traffic check's pure parts (src/analysis/traffic.ts): reading the
// revision an answer names, the count of answers in a row, its deadlines, and
// the schema's rules; and TEAL_REVISION in the ReplicaSet (replicaset.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { MeasurementResult } from '../../src/analysis/measurement.ts';
import { RESULT_GRACE_MS } from '../../src/analysis/run.ts';
import {
  hostOf,
  judgeSeen,
  readRevision,
  recordTraffic,
  startTraffic,
  stepTraffic,
  type TrafficStep,
  trafficCheckAsCheck,
  trafficCheckProblems,
  trafficInFlight,
} from '../../src/analysis/traffic.ts';
import { measureRevision } from '../../src/analysis/web.ts';
import { podTemplateHash } from '../../src/app/hash.ts';
import { type App, AppSchema } from '../../src/app/schema.ts';
import {
  REVISION_ENV,
  type TrafficCheck,
  type TrafficCheckInput,
  TrafficCheckSchema,
  type TrafficCheckStatus,
} from '../../src/app/traffic-schema.ts';
import { replicaSetManifest } from '../../src/rollout/replicaset.ts';

const T0 = Date.parse('2026-11-27T03:00:00.000Z');
const S = 1000;
const BOUND = 60 * S;
const HOST = 'web.example.com';
const expected = { podTemplateHash: 'abc1234567', revision: 3 };

const spec = (over: Partial<TrafficCheckInput> = {}): TrafficCheck =>
  TrafficCheckSchema.parse({ url: 'http://web.example.com/version', jsonPath: '{$.revision}', ...over });

const answer = (text: string, headers: Record<string, string> = {}) => ({ headers: new Headers(headers), text });
const ok = (value: string): MeasurementResult => ({ phase: 'Successful', value });
const old = (value: string): MeasurementResult => ({ phase: 'Failed', value });
const error = (message: string): MeasurementResult => ({ phase: 'Error', message });

/** Steps the check, answers what it asks with the next result, `every` ms apart, until it ends or answers run out. */
function drive(
  check: TrafficCheck,
  results: MeasurementResult[],
  every = S,
): { state: TrafficCheckStatus; steps: TrafficStep[]; nowMs: number } {
  let state = startTraffic(expected, T0);
  let nowMs = T0;
  const steps: TrafficStep[] = [];
  for (const result of results) {
    const step = stepTraffic(check, state, nowMs, BOUND, HOST);
    steps.push(step);
    state = step.state;
    if (state.phase !== 'Running' || !step.request) break;
    nowMs += 10;
    state = recordTraffic(state, step.request.n, result, nowMs);
    nowMs += every;
  }
  const last = stepTraffic(check, state, nowMs, BOUND, HOST);
  steps.push(last);
  return { state: last.state, steps, nowMs };
}

describe('reading the revision an answer names', () => {
  it('reads it at jsonPath, a string or a number', () => {
    expect(readRevision(answer('{"revision":"abc1234567"}'), { jsonPath: '{$.revision}' })).toEqual({
      ok: true,
      revision: 'abc1234567',
    });
    expect(readRevision(answer('{"r":{"n":3}}'), { jsonPath: '{$.r.n}' })).toEqual({ ok: true, revision: '3' });
  });

  it('reads it in revisionHeader', () => {
    const seen = readRevision(answer('hello', { 'X-Revision': ' abc1234567 ' }), { revisionHeader: 'X-Revision' });
    expect(seen).toEqual({ ok: true, revision: 'abc1234567' });
  });

  it('reads the whole body with neither, and refuses a JSON body then', () => {
    expect(readRevision(answer('abc1234567\n'), {})).toEqual({ ok: true, revision: 'abc1234567' });
    const json = readRevision(answer('{"revision":"x"}'), {});
    expect(json).toMatchObject({ ok: false, error: expect.stringContaining('set jsonPath') });
  });

  it('with both, shows both when they disagree, so the answer is not the new revision', () => {
    const both = { revisionHeader: 'X-Revision', jsonPath: '{$.revision}' };
    const seen = readRevision(answer('{"revision":"old0000000"}', { 'x-revision': 'abc1234567' }), both);
    expect(seen).toEqual({ ok: true, revision: 'abc1234567 (header) / old0000000 (body)' });
    expect(judgeSeen(seen, expected).phase).toBe('Failed');
    const agree = readRevision(answer('{"revision":"abc1234567"}', { 'x-revision': 'abc1234567' }), both);
    expect(judgeSeen(agree, expected).phase).toBe('Successful');
  });

  it('says what is missing: a header, a value at jsonPath, JSON at all', () => {
    expect(readRevision(answer('{}'), { revisionHeader: 'X-Revision' })).toMatchObject({
      ok: false,
      error: 'the answer has no X-Revision header',
    });
    expect(readRevision(answer('{"a":1}'), { jsonPath: '{$.revision}' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('no value at $.revision'),
    });
    expect(readRevision(answer('<html>'), { jsonPath: '{$.revision}' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('not JSON'),
    });
    expect(readRevision(answer('{"revision":{"a":1}}'), { jsonPath: '{$.revision}' })).toMatchObject({
      ok: false,
      error: expect.stringContaining('not a revision'),
    });
  });

  it('judges by the hash or the revision number; anything else is another revision, nothing read an Error', () => {
    expect(judgeSeen({ ok: true, revision: 'abc1234567' }, expected)).toEqual(ok('abc1234567'));
    expect(judgeSeen({ ok: true, revision: '3' }, expected)).toEqual(ok('3'));
    expect(judgeSeen({ ok: true, revision: 'fff0000000' }, expected)).toEqual(old('fff0000000'));
    expect(judgeSeen({ ok: true, revision: '2' }, expected)).toEqual(old('2'));
    expect(judgeSeen({ ok: false, error: 'no header' }, expected)).toEqual(error('no header'));
  });
});

describe('the count of answers in a row', () => {
  it('passes once consecutiveSuccessLimit answers in a row name the new revision', () => {
    const check = spec({ consecutiveSuccessLimit: 3 });
    const { state, steps } = drive(check, [ok('abc1234567'), ok('3'), ok('abc1234567')]);
    expect(state).toMatchObject({ phase: 'Successful', consecutive: 3, taken: 3, lastSeen: 'abc1234567' });
    expect(state.message).toBe('revision 3 answered 3 times in a row at web.example.com (consecutiveSuccessLimit 3)');
    expect(steps.map((s) => s.request?.n)).toEqual([1, 2, 3, undefined]);
  });

  it('an answer from the old revision starts the count again', () => {
    const check = spec({ consecutiveSuccessLimit: 3 });
    const { state } = drive(check, [ok('abc1234567'), ok('abc1234567'), old('fff0000000'), ok('abc1234567')]);
    // Four answers recorded, and the fifth request under way.
    expect(state).toMatchObject({ phase: 'Running', consecutive: 1, taken: 5, inFlight: { n: 5 } });
    const more = drive(check, [ok('abc1234567'), old('fff0000000'), ok('3'), ok('3'), ok('3')]);
    expect(more.state).toMatchObject({ phase: 'Successful', consecutive: 3, taken: 5 });
  });

  it('an error counts as not new: the count starts again, and status says why', () => {
    const check = spec({ consecutiveSuccessLimit: 2 });
    const { state } = drive(check, [ok('abc1234567'), error('no answer within 10s (timeoutSeconds)')]);
    expect(state).toMatchObject({
      phase: 'Running',
      consecutive: 0,
      lastSeen: 'abc1234567',
      lastError: 'no answer within 10s (timeoutSeconds)',
    });
    expect(state.message).toContain('last request: no answer within 10s');
  });

  it('fails at the bound, naming the host and what it saw last', () => {
    const check = spec({ consecutiveSuccessLimit: 3, interval: '10s' });
    const { state } = drive(
      check,
      Array.from({ length: 20 }, () => old('fff0000000')),
      10 * S,
    );
    expect(state.phase).toBe('Failed');
    expect(state.message).toBe(
      'revision 3 did not answer 3 times in a row at web.example.com within 60s: 0 in a row at the end, 6 requests; last answer named fff0000000',
    );
    expect(state.finishedAt).toBeDefined();
    expect(state.inFlight).toBeUndefined();
  });

  it('asks at the interval from the end of the last request, and wakes exactly then', () => {
    const check = spec({ interval: '5s' });
    let state = startTraffic(expected, T0);
    const first = stepTraffic(check, state, T0, BOUND, HOST);
    expect(first.request).toMatchObject({ n: 1, resume: false });
    state = recordTraffic(first.state, 1, ok('abc1234567'), T0 + 200);
    const waiting = stepTraffic(check, state, T0 + 300, BOUND, HOST);
    expect(waiting.request).toBeUndefined();
    expect(waiting.wakeAtMs).toBe(T0 + 200 + 5 * S);
    expect(stepTraffic(check, state, T0 + 200 + 5 * S, BOUND, HOST).request).toMatchObject({ n: 2 });
  });

  it('hands the request in flight out again after a restart, under the same key, and takes its answer once', () => {
    const check = spec();
    const first = stepTraffic(check, startTraffic(expected, T0), T0, BOUND, HOST);
    const again = stepTraffic(check, first.state, T0 + 500, BOUND, HOST);
    expect(again.request).toMatchObject({ key: first.request?.key, n: 1, resume: true });
    expect(trafficInFlight(again.state)).toBe(first.request?.key);
    const recorded = recordTraffic(again.state, 1, ok('abc1234567'), T0 + 600);
    expect(recorded.consecutive).toBe(1);
    expect(recordTraffic(recorded, 1, ok('abc1234567'), T0 + 700)).toBe(recorded);
    expect(trafficInFlight(recorded)).toBeUndefined();
  });

  it('a request whose answer never comes is an Error past its deadline', () => {
    const check = spec({ timeoutSeconds: 5 });
    const first = stepTraffic(check, startTraffic(expected, T0), T0, BOUND, HOST);
    const deadline = T0 + 5 * S + RESULT_GRACE_MS;
    expect(first.wakeAtMs).toBe(deadline);
    const late = stepTraffic(check, first.state, deadline, BOUND, HOST);
    expect(late.state).toMatchObject({ consecutive: 0, lastError: 'no answer within 35s' });
    expect(late.state.inFlight).toBeUndefined();
    expect(late.wakeAtMs).toBe(deadline + S);
    expect(stepTraffic(check, late.state, deadline + S, BOUND, HOST).request).toMatchObject({ n: 2, resume: false });
  });

  it('is a fixed point: stepping its own output at the same time changes nothing', () => {
    const check = spec();
    const first = stepTraffic(check, startTraffic(expected, T0), T0, BOUND, HOST);
    expect(stepTraffic(check, first.state, T0, BOUND, HOST).state).toEqual(first.state);
  });
});

describe('measureRevision', () => {
  it('asks on a new connection each time, reads the revision, and masks a secret the answer echoes', async () => {
    let connections = 0;
    const server = http
      .createServer((req, res) => {
        res.setHeader('x-revision', req.headers.authorization === 'Bearer s3cret' ? 's3cret' : 'abc1234567');
        res.end('{}');
      })
      .on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v`;
    const check = (auth: string) => ({
      check: trafficCheckAsCheck(spec({ url, headers: [{ key: 'Authorization', value: auth }] })),
      redact: (text: string) => text.replaceAll('s3cret', '*****'),
    });
    const read = { revisionHeader: 'X-Revision' };
    try {
      for (let i = 0; i < 5; i++) {
        expect(await measureRevision(check('Bearer x'), read, expected, {})).toEqual(ok('abc1234567'));
        // Let a connection kept alive go back to the pool, so a second request could reuse it.
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(connections).toBe(5);
      expect(await measureRevision(check('Bearer s3cret'), read, expected, {})).toEqual(old('*****'));
    } finally {
      server.close();
    }
  });
});

describe('the check as a web check, and its messages', () => {
  it('goes out as a GET of its url with its headers, timeout and jsonPath', () => {
    const check = trafficCheckAsCheck(
      spec({ headers: [{ key: 'Authorization', value: 'Bearer {{args.token}}' }], timeoutSeconds: 3 }),
    );
    expect(check.provider.web).toEqual({
      method: 'GET',
      url: 'http://web.example.com/version',
      headers: [{ key: 'Authorization', value: 'Bearer {{args.token}}' }],
      timeoutSeconds: 3,
      jsonPath: '{$.revision}',
    });
  });

  it('names only the host of its URL: no userinfo, path or query', () => {
    expect(hostOf('https://user:pw@shop.example.com:8443/v?token=s3cret')).toBe('shop.example.com:8443');
    expect(hostOf('{{args.url}}')).toBe('the trafficCheck url');
    expect(hostOf('http://{{args.host}}/v')).toBe('the trafficCheck url');
  });

  it('refuses a placeholder its args do not fill, naming the field', () => {
    const check = spec({
      url: 'http://{{args.host}}/v?t={{args.token}}',
      headers: [{ key: 'X', value: '{{preview.revision}}' }],
      args: [{ name: 'host', value: 'a.example.com' }],
    });
    expect(trafficCheckProblems(check, 'tc')).toEqual([
      'tc.url: {{args.token}} names no argument of tc.args',
      'tc.headers[0].value: {{preview.revision}} names no argument of tc.args',
    ]);
  });

  it('has defaults, and refuses an interval under 1s and a bad header name', () => {
    expect(spec()).toMatchObject({ consecutiveSuccessLimit: 10, interval: '1s', timeoutSeconds: 10 });
    expect(TrafficCheckSchema.safeParse({ url: 'http://a/', interval: '100ms' }).error?.message).toContain(
      'at least 1s',
    );
    expect(TrafficCheckSchema.safeParse({ url: 'http://a/', revisionHeader: 'X Rev' }).error?.message).toContain(
      'HTTP header name',
    );
    expect(TrafficCheckSchema.safeParse({ url: 'ftp://a/' }).success).toBe(false);
  });
});

describe('spec.revisionEnv', () => {
  const app = (revisionEnv: boolean): App =>
    AppSchema.parse({
      apiVersion: 'teal.dev/v1alpha1',
      kind: 'App',
      metadata: { name: 'web', namespace: 'default', uid: 'u1' },
      spec: {
        image: 'registry.example.com/web:1',
        revisionEnv,
        template: {
          spec: {
            initContainers: [{ name: 'init', image: 'busybox' }],
            containers: [
              { name: 'app', env: [{ name: 'A', value: '1' }] },
              { name: 'side', image: 'busybox', env: [{ name: REVISION_ENV, value: 'mine' }] },
            ],
          },
        },
      },
    });

  it('puts TEAL_REVISION, from the pod hash label, in every container that does not set it itself', () => {
    const revision = { hash: 'abc1234567', image: 'registry.example.com/web:1' };
    const spec = replicaSetManifest(app(true), revision, 3, 2).spec.template.spec as unknown as {
      containers: { env: unknown[] }[];
      initContainers: { env: unknown[] }[];
    };
    const env = {
      name: REVISION_ENV,
      valueFrom: { fieldRef: { fieldPath: "metadata.labels['teal.dev/pod-template-hash']" } },
    };
    expect(spec.containers[0]?.env).toEqual([{ name: 'A', value: '1' }, env]);
    expect(spec.containers[1]?.env).toEqual([{ name: REVISION_ENV, value: 'mine' }]);
    expect(spec.initContainers[0]?.env).toEqual([env]);
  });

  it('changes no pod-template hash, and adds nothing when off', () => {
    const on = app(true);
    const off = app(false);
    expect(podTemplateHash('i', on.spec.template)).toBe(podTemplateHash('i', off.spec.template));
    const spec = replicaSetManifest(off, { hash: 'h', image: 'i' }, 1, 1).spec.template.spec;
    expect(JSON.stringify(spec)).not.toContain('fieldRef');
  });
});
