// The web provider (src/analysis/web.ts) against a real HTTP server on 127.0.0.1:
// the answer judged by the check's conditions; everything else that can happen
// to a request (non-2xx, redirects, deadlines, huge or non-JSON answers) is an
// Error measurement, never a throw; secrets sent in headers never come back in
// the value or the message.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ArgValue, resolveCheck } from '../../src/analysis/args.ts';
import { ConditionPool } from '../../src/analysis/condition-pool.ts';
import { MAX_ANSWER_BYTES, measureWeb } from '../../src/analysis/web.ts';
import { type CheckInput, CheckSchema, MAX_MESSAGE_LENGTH, MAX_VALUE_LENGTH } from '../../src/app/analysis-schema.ts';
import { MASK } from '../../src/app/mask.ts';

const SECRET = 's3cr3t-t0ken-4242';
const values: ArgValue[] = [{ name: 'token', value: SECRET, secret: true }];

let server: Server;
let base: string;
let lastHeaders: IncomingHttpHeaders = {};
const pool = new ConditionPool();

beforeAll(async () => {
  server = createServer((req, res) => {
    lastHeaders = req.headers;
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const body: Buffer[] = [];
    req.on('data', (chunk: Buffer) => body.push(chunk));
    req.on('end', () => answer(url, req.method ?? '', req.headers, Buffer.concat(body).toString(), res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await pool.stop();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

type Res = Parameters<Parameters<typeof createServer>[1] & object>[1];

function answer(url: URL, method: string, headers: IncomingHttpHeaders, body: string, res: Res): unknown {
  const json = (status: number, value: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
  switch (url.pathname) {
    case '/metrics':
      return json(200, { data: { latency: Number(url.searchParams.get('latency')), ok: true } });
    case '/status':
      return json(Number(url.searchParams.get('code')), { error: 'boom' });
    case '/redirect':
      return res.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
    case '/slow':
      return undefined; // never answers
    case '/huge':
      // Chunked, no content-length: the limit must hold while reading, not only on the header.
      for (let i = 0; i < 20; i++) res.write('x'.repeat(100 * 1024));
      return res.end();
    case '/text':
      return res.writeHead(200, { 'content-type': 'text/plain' }).end('all good');
    case '/echo':
      return json(200, { method, authorization: headers.authorization, contentType: headers['content-type'], body });
    default:
      return json(404, {});
  }
}

function check(web: Record<string, unknown>, conditions: Pick<CheckInput, 'successCondition' | 'failureCondition'>) {
  const parsed = CheckSchema.parse({ name: 'web', ...conditions, provider: { web } });
  const out = resolveCheck(parsed, values, { appName: 'a', appNamespace: 'n' });
  if (!out.ok) throw new Error(out.errors.join('; '));
  return out;
}

const measure = (
  web: Record<string, unknown>,
  conditions: Pick<CheckInput, 'successCondition' | 'failureCondition'> = {},
  signal?: AbortSignal,
) =>
  measureWeb(check(web, conditions), { judge: (request) => pool.judge('n/a', request), ...(signal ? { signal } : {}) });

describe('measureWeb: the answer judged', () => {
  const both = { successCondition: 'result.data.latency < 100.0', failureCondition: 'result.data.latency > 500.0' };

  it.each([
    [50, 'Successful', /successCondition "result.data.latency < 100.0" is true/],
    [900, 'Failed', /failureCondition "result.data.latency > 500.0" is true/],
    [300, 'Inconclusive', /neither successCondition .* nor failureCondition .* is true/],
  ])('latency %i is %s', async (latency, phase, message) => {
    const m = await measure({ url: `${base}/metrics?latency=${latency}` }, both);
    expect(m.phase).toBe(phase);
    expect(m.message).toMatch(message);
    expect(m.value).toBe(`{"data":{"latency":${latency},"ok":true}}`);
  });

  it('selects the part jsonPath names: the value is that part', async () => {
    const m = await measure(
      { url: `${base}/metrics?latency=7`, jsonPath: '{$.data.latency}' },
      { successCondition: 'result < 10.0' },
    );
    expect(m).toMatchObject({ phase: 'Successful', value: '7' });
  });

  it('a jsonPath that finds nothing is an Error naming the step', async () => {
    const m = await measure({ url: `${base}/metrics?latency=7`, jsonPath: '{$.data.p99}' });
    expect(m.phase).toBe('Error');
    expect(m.message).toMatch(/no value at \$\.data\.p99/);
  });

  it('an answer that is not JSON is result as a string; with a jsonPath, an Error', async () => {
    const text = await measure({ url: `${base}/text` }, { successCondition: 'result == "all good"' });
    expect(text).toMatchObject({ phase: 'Successful', value: '"all good"' });
    const selected = await measure({ url: `${base}/text`, jsonPath: '{$.ok}' });
    expect(selected.phase).toBe('Error');
    expect(selected.message).toMatch(/not JSON/);
  });

  it('sends the method, body and a JSON content type', async () => {
    const m = await measure(
      { url: `${base}/echo`, method: 'POST', body: '{"q":1}' },
      { successCondition: 'result.method == "POST" && result.body == "{\\"q\\":1}"' },
    );
    expect(m.phase).toBe('Successful');
    expect(lastHeaders['content-type']).toBe('application/json');
  });
});

describe('measureWeb: errors are measurements, not throws', () => {
  it('a 500 is an Error naming the status', async () => {
    const m = await measure({ url: `${base}/status?code=500` });
    expect(m.phase).toBe('Error');
    expect(m.message).toMatch(/^answered 500 Internal Server Error: a web check needs a 2xx answer/);
  });

  it('a 302 is an Error, and the redirect is not followed', async () => {
    const target = `${base}/metrics?latency=1`;
    const m = await measure({ url: `${base}/redirect?to=${encodeURIComponent(target)}` });
    expect(m.phase).toBe('Error');
    expect(m.message).toContain(`answered 302 Found to ${target}: Teal follows no redirects`);
  });

  it('no answer within timeoutSeconds is an Error', async () => {
    const m = await measure({ url: `${base}/slow`, timeoutSeconds: 1 });
    expect(m).toEqual({ phase: 'Error', message: 'no answer within 1s (timeoutSeconds)' });
  });

  it("the caller's signal cancels the request", async () => {
    const controller = new AbortController();
    const pending = measure({ url: `${base}/slow`, timeoutSeconds: 300 }, {}, controller.signal);
    controller.abort();
    expect(await pending).toEqual({ phase: 'Error', message: 'the measurement was cancelled' });
  });

  it('an answer over the size limit is an Error', async () => {
    const m = await measure({ url: `${base}/huge` });
    expect(m).toEqual({ phase: 'Error', message: `the answer is larger than ${MAX_ANSWER_BYTES} bytes` });
  });

  it('a refused connection is an Error naming why', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const m = await measure({ url: `http://127.0.0.1:${port}/` });
    expect(m.phase).toBe('Error');
    expect(m.message).toMatch(/^the request failed: .*ECONNREFUSED/);
  });

  it('a condition that cannot be evaluated is an Error with the value', async () => {
    const m = await measure({ url: `${base}/metrics?latency=1` }, { successCondition: 'result.missing > 1.0' });
    expect(m.phase).toBe('Error');
    expect(m.message).toMatch(/could not evaluate successCondition/);
    expect(m.value).toBe('{"data":{"latency":1,"ok":true}}');
  });
});

describe('measureWeb: secrets', () => {
  const bearer = { key: 'Authorization', value: 'Bearer {{args.token}}' };

  it('sends a header from a Secret, and masks it where the server echoes it back', async () => {
    const m = await measure(
      { url: `${base}/echo`, headers: [bearer] },
      { successCondition: 'result.authorization.startsWith("Bearer ")' },
    );
    expect(lastHeaders.authorization).toBe(`Bearer ${SECRET}`);
    expect(m.phase).toBe('Successful');
    expect(m.value).toContain(`"authorization":"Bearer ${MASK}"`);
    expect(m.message).toContain(`Bearer ${MASK}`);
    expect(JSON.stringify(m)).not.toContain(SECRET);
  });

  it('masks a secret in an error text, such as a redirect to a URL holding it', async () => {
    const m = await measure({
      url: `${base}/redirect?to=${encodeURIComponent(`${base}/x?token=`)}{{args.token}}`,
      headers: [bearer],
    });
    expect(m.phase).toBe('Error');
    expect(m.message).toContain(`token=${MASK}`);
    expect(JSON.stringify(m)).not.toContain(SECRET);
  });

  it('keeps value and message within the status bounds', async () => {
    const m = await measure({ url: `${base}/echo`, method: 'POST', body: 'y'.repeat(5000), headers: [bearer] });
    expect(m.phase).toBe('Successful');
    expect(m.value?.length).toBeLessThanOrEqual(MAX_VALUE_LENGTH);
    expect(m.message?.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    expect(JSON.stringify(m)).not.toContain(SECRET);
  });
});
