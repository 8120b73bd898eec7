// A loopback stand-in for a git host's REST API (issue #28): routes answer
// with the shapes the providers document, every request is recorded (method,
// path, query, headers, body) for the test to assert, and GETs carry an ETag
// and answer If-None-Match with a 304, counted apart, as GitHub's do. A
// contract test of Teal's requests and of its reading of the answers, not a
// real server.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface FakeAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** JSON unless a string. */
  body?: unknown;
}

/** Answers a request, or undefined to let the next route try. */
export type Route = (req: FakeRequest, base: string) => FakeAnswer | undefined;

export interface FakeHost {
  base: string;
  requests: FakeRequest[];
  /** 304s answered. */
  notModified: number;
  routes: Route[];
  close(): Promise<void>;
}

export async function fakeHost(routes: Route[] = []): Promise<FakeHost> {
  const host: FakeHost = { base: '', requests: [], notModified: 0, routes, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', host.base);
      const text = Buffer.concat(chunks).toString('utf8');
      const request: FakeRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: text === '' ? undefined : JSON.parse(text),
      };
      host.requests.push(request);
      const answer = host.routes.reduce<FakeAnswer | undefined>((a, r) => a ?? r(request, host.base), undefined);
      const status = answer?.status ?? (answer ? 200 : 404);
      const body =
        answer?.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
      const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
      const headers = { 'content-type': 'application/json', ...answer?.headers };
      if (request.method === 'GET' && status === 200) {
        if (req.headers['if-none-match'] === etag) {
          host.notModified++;
          res.writeHead(304, { ...headers, etag });
          res.end();
          return;
        }
        Object.assign(headers, { etag });
      }
      res.writeHead(status, headers);
      res.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  host.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  host.close = async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  };
  return host;
}

/** A route for one method and exact path. */
export function on(method: string, path: string, answer: (req: FakeRequest, base: string) => FakeAnswer): Route {
  return (req, base) => (req.method === method && req.path === path ? answer(req, base) : undefined);
}

/** What a ProviderMetrics saw. */
export function recordingMetrics() {
  const codes: string[] = [];
  const remaining: number[] = [];
  return {
    codes,
    remaining,
    metrics: {
      request: (provider: string, code: string) => codes.push(`${provider} ${code}`),
      rateLimitRemaining: (_provider: string, n: number) => remaining.push(n),
    },
  };
}
