import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/api/webhook-providers.ts';
import type { NotificationDestination, PendingNotification } from '../../src/app/schema.ts';
import { slackBody } from '../../src/notify/bodies.ts';
import { Sender, verdictOf } from '../../src/notify/sender.ts';
import { waitFor } from '../support/wait.ts';

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

/** A receiver that answers each request with the next status of `answers` (the last one repeats). */
async function receiver(answers: number[]) {
  const received: Received[] = [];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.statusCode = answers[Math.min(received.length - 1, answers.length - 1)] ?? 200;
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook?token=secret-token`, received };
}

const app = { key: 'team/web', namespace: 'team', name: 'web' };
const entry: PendingNotification = {
  id: 'd1',
  trigger: 'promoted',
  destination: 'hook',
  at: new Date().toISOString(),
  revision: 2,
  by: 'alice',
  via: 'cli',
};
const hook: NotificationDestination = {
  name: 'hook',
  type: 'webhook',
  urlSecretRef: { name: 'hook', key: 'url' },
  signingSecretRef: { name: 'hook', key: 'key' },
};

function sender(url: string, secrets: Record<string, string> = { url, key: 'sign-me' }) {
  const enqueued: string[] = [];
  const s = new Sender({
    readSecretValue: async (_ns, _name, key) => secrets[key],
    enqueue: (k) => enqueued.push(k),
    canWrite: () => true,
    logger: pino({ level: 'silent' }),
    backoffMs: 20,
  });
  return { s, enqueued };
}

/** Waits on a condition, with the suite's generous deadline and a message naming what never came. */
const until = (check: () => boolean, what = 'the condition') =>
  waitFor(what, async () => (check() ? true : undefined), { intervalMs: 10 });

describe('Sender', () => {
  it('sends the signed JSON body with its delivery id; a receiver verifies it as Teal verifies webhooks', async () => {
    const r = await receiver([200]);
    const { s, enqueued } = sender(r.url);
    s.dispatch(app, [entry], [hook]);
    await until(() => s.outcomesFor(app.key).get('d1')?.result === 'delivered');
    expect(r.received).toHaveLength(1);
    const [got] = r.received;
    expect(got?.headers['x-teal-delivery']).toBe('d1');
    expect(verifySignature('generic', got?.headers ?? {}, got?.body ?? Buffer.alloc(0), 'sign-me')).toBe(true);
    expect(verifySignature('generic', got?.headers ?? {}, got?.body ?? Buffer.alloc(0), 'other')).toBe(false);
    expect(JSON.parse(got?.body.toString() ?? '')).toEqual({
      id: 'd1',
      trigger: 'promoted',
      app: { namespace: 'team', name: 'web' },
      revision: 2,
      image: null,
      phase: null,
      message: null,
      by: 'alice',
      via: 'cli',
      at: entry.at,
    });
    expect(s.outcomesFor(app.key).get('d1')?.message).toBe('to hook: HTTP 200');
    expect(enqueued).toEqual(['team/web']);
    // Answered and still in status: not sent again.
    s.dispatch(app, [entry], [hook]);
    // Out of status: forgotten.
    s.dispatch(app, [], [hook]);
    expect(s.outcomesFor(app.key).size).toBe(0);
    expect(r.received).toHaveLength(1);
  });

  it('a 500 is retried with the same id, and the retry is reported once', async () => {
    const r = await receiver([500, 200]);
    const { s, enqueued } = sender(r.url);
    s.dispatch(app, [entry], [hook]);
    await until(() => s.outcomesFor(app.key).get('d1')?.result === 'delivered');
    expect(r.received.map((x) => x.headers['x-teal-delivery'])).toEqual(['d1', 'd1']);
    expect(enqueued).toHaveLength(2);
  });

  it('a 404 fails for good at once; the URL is never in the message', async () => {
    const r = await receiver([404]);
    const { s } = sender(r.url);
    s.dispatch(app, [entry], [hook]);
    await until(() => s.outcomesFor(app.key).get('d1')?.result === 'failed');
    expect(r.received).toHaveLength(1);
    expect(s.outcomesFor(app.key).get('d1')?.message).toBe('to hook: HTTP 404');
  });

  it('a missing Secret key and a refused connection are retried, named without the URL', async () => {
    const { s } = sender('http://127.0.0.1:1/hook?token=secret-token', {
      url: 'http://127.0.0.1:1/x?token=secret-token',
    });
    s.dispatch(app, [entry], [hook]);
    await until(() => s.outcomesFor(app.key).get('d1')?.result === 'retrying');
    expect(s.outcomesFor(app.key).get('d1')?.message).toBe('to hook: Secret hook has no key key; retrying');
    s.stop();
    const unsigned = { ...hook, signingSecretRef: undefined };
    const other = sender('', { url: 'http://127.0.0.1:1/x?token=secret-token' }).s;
    other.dispatch(app, [entry], [unsigned]);
    await until(() => other.outcomesFor(app.key).get('d1')?.result === 'retrying');
    const message = other.outcomesFor(app.key).get('d1')?.message ?? '';
    expect(message).toMatch(/^to hook: network error/);
    expect(message).not.toContain('secret-token');
    other.stop();
  });

  it('hands an App back at once, though a retry waits: the next owner sends what status holds', async () => {
    const r = await receiver([503]);
    const s = new Sender({
      readSecretValue: async () => r.url,
      enqueue: () => {},
      canWrite: () => true,
      logger: pino({ level: 'silent' }),
      backoffMs: 3_600_000,
      maxBackoffMs: 3_600_000,
    });
    s.dispatch(app, [entry], [{ ...hook, signingSecretRef: undefined }]);
    await until(() => s.outcomesFor(app.key).get('d1')?.result === 'retrying');
    await s.handBack((key) => key === app.key);
    expect(s.outcomesFor(app.key).size).toBe(0);
    expect(r.received).toHaveLength(1);
  });

  it('a replica that may not write the App sends nothing', async () => {
    const r = await receiver([200]);
    // Another App, which this replica may write, is sent after it: once that one has arrived, the first
    // would have too (the check is at dispatch, not after a wait).
    const other = { key: 'team/api', namespace: 'team', name: 'api' };
    const s = new Sender({
      readSecretValue: async () => r.url,
      enqueue: () => {},
      canWrite: (key) => key === other.key,
      logger: pino({ level: 'silent' }),
    });
    s.dispatch(app, [entry], [{ ...hook, signingSecretRef: undefined }]);
    s.dispatch(other, [entry], [{ ...hook, signingSecretRef: undefined }]);
    await until(() => r.received.length > 0, "the other App's delivery");
    s.stop();
    expect(r.received).toHaveLength(1);
    expect(JSON.parse(r.received[0]?.body.toString() ?? '{}')).toMatchObject({ app: { name: 'api' } });
  });

  it('classifies answers: 2xx delivered, 408/429/5xx retried (Retry-After honoured), other 4xx and 3xx final', () => {
    const answer = (status: number, retryAfter?: string) =>
      verdictOf({ status, headers: new Headers(retryAfter ? { 'retry-after': retryAfter } : {}) }, 'to x');
    expect(answer(204)).toEqual({ ok: true, message: 'to x: HTTP 204' });
    expect(answer(429, '7')).toEqual({ ok: false, retry: true, message: 'to x: HTTP 429', retryAfterMs: 7000 });
    expect(answer(408)).toMatchObject({ retry: true });
    expect(answer(503)).toMatchObject({ retry: true });
    expect(answer(400)).toMatchObject({ retry: false });
    expect(answer(302)).toMatchObject({ retry: false });
  });

  it('a Slack body has a fallback text and one escaped mrkdwn section', () => {
    const body = slackBody(app, {
      ...entry,
      trigger: 'degraded',
      message: 'a <b> & c',
      by: undefined,
    } as PendingNotification);
    expect(body.text).toBe('team/web revision 2: degraded');
    expect(body.blocks).toEqual([
      {
        type: 'section',
        text: { type: 'mrkdwn', text: '*team/web revision 2: degraded*\na &lt;b&gt; &amp; c\ndelivery d1' },
      },
    ]);
  });
});
