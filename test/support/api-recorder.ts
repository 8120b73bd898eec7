// A plain-HTTP proxy on 127.0.0.1 in front of the test control plane: each
// request is recorded (method and path) and forwarded unchanged, as the test's
// admin identity (or a powerless one, see forbid), to the real API server,
// whose answer goes back as is
// (watches stream through). An operator given its kubeconfig talks to the real
// API server, and a test can count exactly which calls it made, which neither
// a metric without the resource nor the (disabled) audit log would tell.
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, type RequestOptions, request } from 'node:https';
import { join } from 'node:path';
import { kubeConfig } from './kube.ts';

export interface RecordedRequest {
  method: string;
  /** The path without the query. */
  path: string;
}

export interface ApiRecorder {
  /** A kubeconfig whose cluster is this proxy (no credentials: the proxy adds its own). */
  kubeconfig: string;
  requests: RecordedRequest[];
  /** The requests whose connection to the client (the operator) is still open: a watch, a followed log. */
  open: ReadonlySet<RecordedRequest>;
  count(method: string, path: string): number;
  /**
   * From now on, forwards these requests as a user without any permission, so
   * the real API server answers them 403 Forbidden.
   */
  forbid(method: string, path: string): void;
  stop(): Promise<void>;
}

/** A user no RBAC rule names: the API server forbids it everything. */
const NOBODY = 'teal-e2e:nobody';

export async function startApiRecorder(dir: string): Promise<ApiRecorder> {
  const kc = kubeConfig();
  const upstream = new URL(kc.getCurrentCluster()?.server ?? '');
  const tls: RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  const agent = new Agent({
    ca: tls.ca,
    cert: tls.cert,
    key: tls.key,
    ...(tls.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: tls.rejectUnauthorized }),
    keepAlive: true,
  });
  const requests: RecordedRequest[] = [];
  const open = new Set<RecordedRequest>();
  const forbidden = new Set<string>();

  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    const recorded = { method: req.method ?? 'GET', path: path.replace(/\?.*$/, '') };
    requests.push(recorded);
    open.add(recorded);
    res.on('close', () => open.delete(recorded));
    const { host: _host, ...headers } = req.headers;
    const as = forbidden.has(`${recorded.method} ${recorded.path}`) ? { 'impersonate-user': NOBODY } : {};
    const out = request(
      {
        agent,
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path,
        headers: { ...headers, ...tls.headers, ...as },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    // A watch the operator closes ends upstream too.
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  };

  const server = createServer(forward);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const kubeconfig = join(dir, 'recorded-kubeconfig.json');
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      // client-node takes a plain-HTTP server only with this flag; there is no TLS to verify on loopback.
      clusters: [
        { name: 'recorder', cluster: { server: `http://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } },
      ],
      users: [{ name: 'recorder', user: {} }],
      contexts: [{ name: 'recorder', context: { cluster: 'recorder', user: 'recorder' } }],
      'current-context': 'recorder',
    }),
  );
  return {
    kubeconfig,
    requests,
    open,
    count: (method, path) => requests.filter((r) => r.method === method && r.path === path).length,
    forbid: (method, path) => forbidden.add(`${method} ${path}`),
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
