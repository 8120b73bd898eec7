// The data plane's process inside the test's network namespace (started by
// test/cluster/data-plane.ts with `ip netns exec`). Everything it binds or
// connects to is inside that namespace, which has only a loopback device:
// - the API server, relayed from 127.0.0.1:<apiPort> here to a Unix socket
//   that the host side connects to the cluster's API server;
// - kube-proxy, its child, which programs nftables here from that API server;
// - the pods' servers, each on its pod IP (added to lo), answering
//   {"pod", "revision"}, and drained on stop as a kubelet's SIGTERM would;
// - one-off requests and bounded traffic loops the host side asks for.
// The host side talks to it over HTTP on a Unix socket (control routes below).
// It exits, with kube-proxy, when its stdin closes: its parent is gone.
import { execFile, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { promisify } from 'node:util';
import { relayServer } from './relay.ts';

const run = promisify(execFile);

export interface AgentConfig {
  controlSocket: string;
  apiSocket: string;
  apiPort: number;
  kubeProxy: { bin: string; args: string[]; log: string };
  healthzPort: number;
}

export interface ServeRequest {
  key: string;
  name: string;
  ip: string;
  port: number;
  revision: string;
}

/** One request's outcome, as the traffic loop and one-off requests record it. */
export interface Answer {
  /** Milliseconds from the loop's start (one-off requests: 0). */
  t: number;
  status?: number;
  pod?: string;
  revision?: string;
  error?: string;
}

export interface TrafficStats {
  sent: number;
  ok: number;
  failed: number;
  byRevision: Record<string, number>;
  byPod: Record<string, number>;
  failures: Answer[];
  /** Every answer in the order requests were sent, once the loop has stopped; the latest 200 before. */
  answers: Answer[];
  running: boolean;
}

/** Traffic loops are bounded: at most this rate, and each ends at its maxMs (10 minutes at most). */
const MAX_RPS = 1000;
const MAX_TRAFFIC_MS = 10 * 60_000;
const RECENT = 200;

// ---------- pods' servers

interface PodServer {
  req: ServeRequest;
  server: http.Server;
  stopping?: Promise<void>;
  /** Ends the stop at once: no more preStop, every connection cut (SIGKILL). */
  kill?: () => void;
}

const servers = new Map<string, PodServer>();
const ipUsers = new Map<string, number>();
/** Requests to /hold/<token> on a pod wait here until the host releases the token. */
const holds = new Map<string, { pod: string; release: () => void }>();

async function addIp(ip: string): Promise<void> {
  const users = ipUsers.get(ip) ?? 0;
  if (users === 0) await run('ip', ['addr', 'add', `${ip}/32`, 'dev', 'lo']);
  ipUsers.set(ip, users + 1);
}

async function releaseIp(ip: string): Promise<void> {
  const users = (ipUsers.get(ip) ?? 1) - 1;
  if (users > 0) return void ipUsers.set(ip, users);
  ipUsers.delete(ip);
  await run('ip', ['addr', 'del', `${ip}/32`, 'dev', 'lo']).catch(() => {});
}

function podHandler(req: ServeRequest): http.RequestListener {
  return (request, response) => {
    const answer = () => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ pod: req.name, revision: req.revision }));
    };
    const hold = /^\/hold\/([\w-]+)$/.exec(request.url ?? '')?.[1];
    if (hold) holds.set(hold, { pod: req.name, release: answer });
    else answer();
  };
}

async function serve(req: ServeRequest): Promise<void> {
  if (servers.has(req.key)) return;
  await addIp(req.ip);
  const server = http.createServer(podHandler(req));
  servers.set(req.key, { req, server });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(req.port, req.ip, () => resolve());
  }).catch(async (err) => {
    servers.delete(req.key);
    await releaseIp(req.ip);
    throw err;
  });
}

/**
 * A kubelet's stop: the preStop hook's time (the server still accepts), then
 * SIGTERM (the listener closes: new connections are refused, in-flight
 * requests finish), and at the grace period's end, or when the pod is gone
 * from the API server (killServer), the rest is cut.
 */
function stopServer(key: string, preStopMs: number, graceMs: number): Promise<void> {
  const s = servers.get(key);
  if (!s) return Promise.resolve();
  s.stopping ??= (async () => {
    console.error(`stop ${key}: preStop ${preStopMs} ms, grace ${graceMs} ms`);
    const started = Date.now();
    const killed = new Promise<void>((resolve) => {
      s.kill = resolve;
    });
    let preStop: NodeJS.Timeout | undefined;
    await Promise.race([killed, new Promise((resolve) => (preStop = setTimeout(resolve, preStopMs)))]);
    clearTimeout(preStop);
    const closed = new Promise<void>((resolve) => s.server.close(() => resolve()));
    s.server.closeIdleConnections();
    const graceEnd = setTimeout(() => s.kill?.(), Math.max(0, graceMs - (Date.now() - started)));
    void killed.then(() => s.server.closeAllConnections());
    await closed;
    console.error(`stopped ${key}`);
    clearTimeout(graceEnd);
    servers.delete(key);
    await releaseIp(s.req.ip);
  })();
  return s.stopping;
}

/** A pod gone from the API server: its server, stopping or not, ends now. */
function killServer(key: string): Promise<void> {
  const stopped = stopServer(key, 0, 0);
  servers.get(key)?.kill?.();
  return stopped;
}

// ---------- requests and traffic

function request(url: string, timeoutMs: number, t = 0): Promise<Answer> {
  return new Promise((resolve) => {
    // A new connection per request, as kube-proxy balances connections, not requests.
    const req = http.get(url, { agent: false, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => {
        try {
          const { pod, revision } = JSON.parse(body) as { pod?: string; revision?: string };
          if (res.statusCode === 200) return resolve({ t, status: 200, pod, revision });
        } catch {}
        resolve({ t, status: res.statusCode, error: `HTTP ${res.statusCode}: ${body.slice(0, 200)}` });
      });
      res.on('error', (err) => resolve({ t, error: errorText(err) }));
    });
    req.on('error', (err) => resolve({ t, error: errorText(err) }));
  });
}

function errorText(err: unknown): string {
  const e = err as { code?: string; name?: string; message?: string };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timeout';
  return e.code ?? e.message ?? String(err);
}

class TrafficLoop {
  readonly answers: Answer[] = [];
  private readonly byRevision: Record<string, number> = {};
  private readonly byPod: Record<string, number> = {};
  private readonly failures: Answer[] = [];
  private ok = 0;
  private sent = 0;
  private running = true;
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly start = Date.now();
  private readonly url: string;
  private readonly rps: number;
  private readonly timeoutMs: number;
  private readonly maxMs: number;

  constructor(url: string, rps: number, timeoutMs: number, maxMs: number) {
    this.url = url;
    this.rps = rps;
    this.timeoutMs = timeoutMs;
    this.maxMs = maxMs;
    this.tick();
  }

  private tick(): void {
    if (!this.running) return;
    const elapsed = Date.now() - this.start;
    if (elapsed >= this.maxMs) return void this.stop();
    // Catch up to the schedule (a busy event loop sends late, not fewer).
    while (this.sent < Math.floor((elapsed * this.rps) / 1000) + 1) this.send();
    this.timer = setTimeout(() => this.tick(), Math.max(1, Math.floor(1000 / this.rps)));
  }

  private send(): void {
    const index = this.sent++;
    const t = Date.now() - this.start;
    const done = request(this.url, this.timeoutMs, t).then((a) => {
      this.answers[index] = a;
      if (a.error) this.failures.push(a);
      else {
        this.ok += 1;
        this.byRevision[a.revision ?? ''] = (this.byRevision[a.revision ?? ''] ?? 0) + 1;
        this.byPod[a.pod ?? ''] = (this.byPod[a.pod ?? ''] ?? 0) + 1;
      }
      this.inFlight.delete(done);
    });
    this.inFlight.add(done);
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await Promise.all([...this.inFlight]);
  }

  stats(): TrafficStats {
    const done = this.answers.filter(Boolean);
    return {
      sent: this.sent,
      ok: this.ok,
      failed: this.failures.length,
      byRevision: { ...this.byRevision },
      byPod: { ...this.byPod },
      failures: [...this.failures],
      answers: this.running ? done.slice(-RECENT) : done,
      running: this.running,
    };
  }
}

const loops = new Map<string, TrafficLoop>();
let nextLoop = 0;

// ---------- the load balancer model's listener (test/cluster/lb-model.ts decides its targets)

/**
 * A TCP listener on an address of its own in the namespace that sends each
 * new connection to one registered target (round robin), as an ALB in IP
 * mode sends requests to its registered pod IPs. Connections already open to
 * a draining target go on; a target dropped from both lists (its drain delay
 * is over) has its open connections cut. With no registered target it answers
 * 503, as an ALB whose target group has no registered target does.
 */
interface LbListener {
  server: net.Server;
  registered: string[];
  draining: string[];
  next: number;
  /** Open connections by target (ip:port). */
  open: Map<string, Set<net.Socket>>;
  /** Every client connection still open, those answered 503 included, for close. */
  clients: Set<net.Socket>;
}

const NO_TARGET =
  'HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: 20\r\n\r\nno registered target';
const listeners = new Map<string, LbListener>();

function lbConnection(lb: LbListener, client: net.Socket): void {
  lb.clients.add(client);
  client.on('close', () => lb.clients.delete(client));
  const target = lb.registered[lb.next++ % Math.max(1, lb.registered.length)];
  if (!target) return void client.end(NO_TARGET);
  const [host, port] = target.split(':');
  const upstream = net.connect(Number(port), host ?? '');
  const open = lb.open.get(target) ?? new Set<net.Socket>();
  lb.open.set(target, open.add(client));
  const close = () => {
    open.delete(client);
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close).on('close', close);
  upstream.on('error', close).on('close', close);
  client.pipe(upstream).pipe(client);
}

async function lbListen(ip: string, port: number): Promise<void> {
  const key = `${ip}:${port}`;
  if (listeners.has(key)) return;
  await addIp(ip);
  const lb: LbListener = {
    server: net.createServer(),
    registered: [],
    draining: [],
    next: 0,
    open: new Map(),
    clients: new Set(),
  };
  lb.server.on('connection', (client) => lbConnection(lb, client));
  listeners.set(key, lb);
  await new Promise<void>((resolve, reject) => {
    lb.server.once('error', reject);
    lb.server.listen(port, ip, () => resolve());
  });
}

function lbOf(body: Body): LbListener {
  const lb = listeners.get(String(body.listener));
  if (!lb) throw new Error(`no load balancer listener ${String(body.listener)}`);
  return lb;
}

function lbTargets(lb: LbListener, registered: string[], draining: string[]): void {
  lb.registered = registered;
  lb.draining = draining;
  for (const [target, sockets] of lb.open) {
    if (registered.includes(target) || draining.includes(target)) continue;
    for (const socket of sockets) socket.destroy();
    lb.open.delete(target);
  }
}

async function lbClose(key: string): Promise<void> {
  const lb = listeners.get(key);
  if (!lb) return;
  listeners.delete(key);
  lbTargets(lb, [], []);
  const closed = new Promise<void>((resolve) => lb.server.close(() => resolve()));
  for (const client of lb.clients) client.destroy();
  await closed;
  await releaseIp(key.split(':')[0] ?? '');
}

// ---------- control

type Body = Record<string, unknown>;
type Route = (body: Body) => Promise<unknown>;

function bounded(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new Error(`${name} must be a number from ${min} to ${max}`);
  }
  return value;
}

function loopOf(body: Body): TrafficLoop {
  const loop = loops.get(String(body.id));
  if (!loop) throw new Error(`no traffic loop ${String(body.id)}`);
  return loop;
}

function routes(config: AgentConfig): Record<string, Route> {
  return {
    '/health': async () =>
      request(`http://127.0.0.1:${config.healthzPort}/healthz`, 5_000).then((a) => ({
        kubeProxy: a.status ?? a.error,
      })),
    '/serve': async (b) => serve(b as unknown as ServeRequest).then(() => ({})),
    '/stop': async (b) =>
      stopServer(
        String(b.key),
        bounded(b.preStopMs, 'preStopMs', 0, 3_600_000),
        bounded(b.graceMs, 'graceMs', 0, 3_600_000),
      ).then(() => ({})),
    '/kill': async (b) => {
      console.error(`kill ${String(b.key)}`);
      return killServer(String(b.key)).then(() => ({}));
    },
    '/serving': async () => ({
      keys: [...servers.keys()],
      stopping: [...servers].filter(([, s]) => s.stopping).map(([key]) => key),
    }),
    '/request': async (b) => request(String(b.url), bounded(b.timeoutMs, 'timeoutMs', 1, 600_000)),
    '/held': async (b) => ({ pod: holds.get(String(b.token))?.pod }),
    '/release': async (b) => {
      holds.get(String(b.token))?.release();
      holds.delete(String(b.token));
      return {};
    },
    '/traffic/start': async (b) => {
      const id = String(nextLoop++);
      const loop = new TrafficLoop(
        String(b.url),
        bounded(b.rps, 'rps', 1, MAX_RPS),
        bounded(b.timeoutMs, 'timeoutMs', 1, 60_000),
        bounded(b.maxMs ?? MAX_TRAFFIC_MS, 'maxMs', 1, MAX_TRAFFIC_MS),
      );
      loops.set(id, loop);
      return { id };
    },
    '/traffic/stats': async (b) => loopOf(b).stats(),
    '/traffic/stop': async (b) => {
      const loop = loopOf(b);
      await loop.stop();
      loops.delete(String(b.id));
      return loop.stats();
    },
    '/ruleset': async () => ({ text: (await run('nft', ['list', 'ruleset'])).stdout }),
    '/lb/listen': async (b) =>
      lbListen(String(b.ip), bounded(b.port, 'port', 1, 65_535)).then(() => ({ listener: `${b.ip}:${b.port}` })),
    '/lb/targets': async (b) => {
      const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
      lbTargets(lbOf(b), list(b.registered), list(b.draining));
      return {};
    },
    '/lb/open': async (b) => ({
      open: Object.fromEntries([...lbOf(b).open].map(([target, sockets]) => [target, sockets.size])),
    }),
    '/lb/close': async (b) => lbClose(String(b.listener)).then(() => ({})),
  };
}

function controlServer(config: AgentConfig): http.Server {
  const table = routes(config);
  return http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      raw += c;
    });
    req.on('end', () => {
      const route = table[req.url ?? ''];
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (!route) return reply(404, { error: `no route ${req.url}` });
      Promise.resolve()
        .then(() => route(raw ? (JSON.parse(raw) as Body) : {}))
        .then(
          (body) => reply(200, body),
          (err: unknown) => reply(500, { error: err instanceof Error ? err.message : String(err) }),
        );
    });
  });
}

/** 127.0.0.1:<apiPort> in the namespace, piped to the host side's Unix socket to the API server. */
function apiRelay(config: AgentConfig): net.Server {
  return relayServer(() => net.connect(config.apiSocket));
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '') as AgentConfig;
  await run('ip', ['link', 'set', 'lo', 'up']);
  const relay = apiRelay(config);
  await new Promise<void>((resolve) => relay.listen(config.apiPort, '127.0.0.1', resolve));
  const logFd = openSync(config.kubeProxy.log, 'a');
  const kubeProxy = spawn(config.kubeProxy.bin, config.kubeProxy.args, { stdio: ['ignore', logFd, logFd] });
  const exit = () => {
    kubeProxy.kill('SIGKILL');
    process.exit(0);
  };
  kubeProxy.on('exit', (code, signal) => console.error(`kube-proxy exited: ${code ?? signal}`));
  process.stdin.on('end', exit).on('error', exit);
  process.stdin.resume();
  process.on('SIGTERM', exit);
  await new Promise<void>((resolve) => controlServer(config).listen(config.controlSocket, resolve));
  console.error('agent ready');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
