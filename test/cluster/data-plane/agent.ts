// The data plane's process inside the test's network namespace (started by
// test/cluster/data-plane.ts with `ip netns exec`). Everything it binds or
// connects to is inside that namespace, which has only a loopback device:
// - the API server, relayed from 127.0.0.1:<apiPort> here to a Unix socket
//   that the host side connects to the cluster's API server;
// - kube-proxy, its child, which programs nftables here from that API server;
// - the pods' servers, each on its pod IP (added to lo), answering
//   {"pod", "revision"}, and drained on stop as a kubelet's SIGTERM would;
// - one-off requests, and bounded traffic loops the host side asks for, each
//   in a worker thread of its own (traffic.ts);
// The host side talks to it over HTTP on a Unix socket (control routes below).
// It exits, with kube-proxy, when its stdin closes: its parent is gone.
import { execFile, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { type ListenerBackend, pickWeighted } from './lb-plan.ts';
import { relayServer } from './relay.ts';
import { type Answer, type FromLoop, type LoopOptions, type LoopReport, request, type ToLoop } from './traffic.ts';

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
  /** The pod's TEAL_REVISION, if it has one: answered as tealRevision and in X-Teal-Revision, as an app reporting it would. */
  tealRevision?: string;
}

export type { Answer } from './traffic.ts';
/** What a traffic loop reports: its counts, rate, failures (each with the pod that accepted it, if one did). */
export type TrafficStats = LoopReport;

/** Traffic loops are bounded: at most this rate, and each ends at its maxMs (10 minutes at most). */
const MAX_RPS = 1000;
const MAX_TRAFFIC_MS = 60 * 60_000;
/** Requests open at once per loop, unless the start says: a late tick sends what is due up to this. */
const DEFAULT_MAX_IN_FLIGHT = 256;
const TRAFFIC_WORKER = new URL('./traffic.ts', import.meta.url);

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
      if (req.tealRevision !== undefined) response.setHeader('x-teal-revision', req.tealRevision);
      const reported = req.tealRevision !== undefined ? { tealRevision: req.tealRevision } : {};
      response.end(JSON.stringify({ pod: req.name, revision: req.revision, ...reported }));
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
  server.on('connection', (socket: net.Socket) => noteAccepted(`${socket.remoteAddress}:${socket.remotePort}`, req));
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

/**
 * Which pod's server accepted a connection from a client address (address:port),
 * directly or through the load balancer model's listener, and when: a failed
 * request is named by the pod it reached. Bounded: the oldest go first.
 */
const accepted = new Map<string, { pod: string; revision: string; at: number }>();
const ACCEPTED_KEPT = 50_000;

function noteAccepted(from: string, req: ServeRequest): void {
  accepted.delete(from);
  accepted.set(from, { pod: req.name, revision: req.revision, at: Date.now() });
  if (accepted.size > ACCEPTED_KEPT) accepted.delete(accepted.keys().next().value ?? '');
}

/** A traffic loop in its own thread (traffic.ts), and the pods its failed requests reached. */
class TrafficWorker {
  private readonly worker: Worker;
  private readonly via = new Map<string, { pod: string; revision: string }>();
  private readonly waiting = new Map<number, (r: LoopReport) => void>();
  private seq = 0;

  constructor(options: LoopOptions) {
    this.worker = new Worker(TRAFFIC_WORKER, { workerData: options });
    this.worker.on('message', (m: FromLoop) => {
      if (m.type === 'report') {
        this.waiting.get(m.seq)?.(m.report);
        this.waiting.delete(m.seq);
        return;
      }
      // Accepted since the request was sent: the client port was not reused in between.
      const a = accepted.get(m.from);
      if (a && a.at >= m.sentAt) this.via.set(`${m.t}/${m.from}`, { pod: a.pod, revision: a.revision });
    });
    this.worker.on('error', (err) => console.error(`traffic loop: ${String(err)}`));
  }

  private ask(type: ToLoop['type']): Promise<LoopReport> {
    const seq = this.seq++;
    return new Promise<LoopReport>((resolve) => {
      this.waiting.set(seq, resolve);
      this.worker.postMessage({ type, seq } satisfies ToLoop);
    }).then((r) => this.named(r));
  }

  private named(r: LoopReport): LoopReport {
    const name = (a: Answer): Answer => {
      const via = a.error && a.from ? this.via.get(`${a.t}/${a.from}`) : undefined;
      return via ? { ...a, via } : a;
    };
    return { ...r, failures: r.failures.map(name), answers: r.answers.map(name) };
  }

  stats(): Promise<LoopReport> {
    return this.ask('stats');
  }

  async stop(): Promise<LoopReport> {
    const report = await this.ask('stop');
    await this.worker.terminate();
    return report;
  }
}

const loops = new Map<string, TrafficWorker>();
let nextLoop = 0;

// ---------- the load balancer model's listener (test/cluster/lb-model.ts decides its targets)

/**
 * A TCP listener on an address of its own in the namespace that sends each
 * new connection to one registered target, as an ALB in IP mode sends
 * requests to its registered pod IPs: it picks a backend by weight (smooth
 * weighted round robin; the Service model has one backend, a gateway one per
 * backendRef), then a registered target of it, round robin. Connections
 * already open to a draining target go on; a target dropped from both lists
 * (its drain delay is over) has its open connections cut. A backend with no
 * registered target answers 503, as an ALB whose target group has none does;
 * an invalid backend (a backendRef to no Service) and a rule whose weights are
 * all 0 answer 500, as the Gateway API asks.
 */
interface LbListener {
  server: net.Server;
  backends: ListenerBackend[];
  draining: string[];
  /** pickWeighted's state, and each backend's round-robin counter. */
  current: number[];
  next: number[];
  /** Open connections by target (ip:port). */
  open: Map<string, Set<net.Socket>>;
  /** Every client connection still open, those answered 503 included, for close. */
  clients: Set<net.Socket>;
}

function httpError(status: string, text: string): string {
  const head = `HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\nconnection: close\r\n`;
  return `${head}content-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
}

const NO_TARGET = httpError('503 Service Unavailable', 'no registered target');
const INVALID_BACKEND = httpError('500 Internal Server Error', 'invalid backend');
const NO_BACKEND = httpError('500 Internal Server Error', 'no backend with weight');
const listeners = new Map<string, LbListener>();

function lbTarget(lb: LbListener): string | { refuse: string } {
  const i = pickWeighted(
    lb.backends.map((b) => b.weight),
    lb.current,
  );
  const backend = lb.backends[i];
  if (!backend) return { refuse: NO_BACKEND };
  if (backend.invalid) return { refuse: INVALID_BACKEND };
  const n = lb.next[i] ?? 0;
  lb.next[i] = n + 1;
  return backend.registered[n % Math.max(1, backend.registered.length)] ?? { refuse: NO_TARGET };
}

function lbConnection(lb: LbListener, client: net.Socket): void {
  lb.clients.add(client);
  client.on('close', () => lb.clients.delete(client));
  // A client may reset its connection at any time, a 503 answered or not: an unhandled 'error' would end the agent.
  client.on('error', () => client.destroy());
  const target = lbTarget(lb);
  if (typeof target !== 'string') {
    // Read (and drop) what the client sends: a socket nobody reads never sees the client's FIN,
    // so it never closes, and each refused connection kept its descriptor (the traffic bench's
    // agent reached its limit of 20,000 after some 18,000 answers of 503, and every request failed with EMFILE).
    client.resume();
    return void client.end(target.refuse);
  }
  const [host, port] = target.split(':');
  const pod = [...servers.values()].find((s) => `${s.req.ip}:${s.req.port}` === target);
  if (pod) noteAccepted(`${client.remoteAddress}:${client.remotePort}`, pod.req);
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
    backends: [],
    draining: [],
    current: [],
    next: [],
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

function lbTargets(lb: LbListener, backends: ListenerBackend[], draining: string[]): void {
  // Another set of backends: the weighted choice starts over.
  if (backends.length !== lb.backends.length) {
    lb.current = [];
    lb.next = [];
  }
  lb.backends = backends;
  lb.draining = draining;
  const kept = new Set([...backends.flatMap((b) => b.registered), ...draining]);
  for (const [target, sockets] of lb.open) {
    if (kept.has(target)) continue;
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

// ---------- ways in from the host

/**
 * A Unix socket (on the host's filesystem, so the host side reaches it) whose
 * every connection is made again from inside the namespace to a ClusterIP or
 * a load balancer listener here: the host end (data-plane.ts entry) listens
 * on the host's 127.0.0.1 and pipes to it.
 */
const entries = new Map<string, net.Server>();

async function entryOpen(socket: string, host: string, port: number): Promise<void> {
  if (entries.has(socket)) return;
  const server = relayServer(() => net.connect(port, host));
  entries.set(socket, server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
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

function loopOf(body: Body): TrafficWorker {
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
      const loop = new TrafficWorker({
        url: String(b.url),
        rps: bounded(b.rps, 'rps', 1, MAX_RPS),
        timeoutMs: bounded(b.timeoutMs, 'timeoutMs', 1, 60_000),
        maxMs: bounded(b.maxMs ?? MAX_TRAFFIC_MS, 'maxMs', 1, MAX_TRAFFIC_MS),
        maxInFlight: bounded(b.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, 'maxInFlight', 1, 10_000),
      });
      loops.set(id, loop);
      return { id };
    },
    '/traffic/stats': async (b) => loopOf(b).stats(),
    '/traffic/stop': async (b) => {
      const loop = loopOf(b);
      loops.delete(String(b.id));
      return loop.stop();
    },
    '/ruleset': async () => ({ text: (await run('nft', ['list', 'ruleset'])).stdout }),
    '/lb/listen': async (b) =>
      lbListen(String(b.ip), bounded(b.port, 'port', 1, 65_535)).then(() => ({ listener: `${b.ip}:${b.port}` })),
    '/lb/targets': async (b) => {
      const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
      const backends = (Array.isArray(b.backends) ? (b.backends as Body[]) : []).map((x, i) => ({
        weight: bounded(x.weight, `backends[${i}].weight`, 0, 1_000_000),
        registered: list(x.registered),
        invalid: x.invalid === true,
      }));
      lbTargets(lbOf(b), backends, list(b.draining));
      return {};
    },
    '/lb/open': async (b) => ({
      open: Object.fromEntries([...lbOf(b).open].map(([target, sockets]) => [target, sockets.size])),
      clients: lbOf(b).clients.size,
    }),
    '/lb/close': async (b) => lbClose(String(b.listener)).then(() => ({})),
    '/entry/open': async (b) =>
      entryOpen(String(b.socket), String(b.host), bounded(b.port, 'port', 1, 65_535)).then(() => ({})),
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
