// The data plane's traffic loop (issue #26 §1), in a worker thread of the
// agent (agent.ts), so inside the test's network namespace. Its own thread,
// because on a busy machine the agent's main thread (the pods' servers, the
// load balancer model's listener, kube-proxy's health checks) starved a loop
// sharing it: at 200 requests a second, requests timed out that the loop had
// not even read yet. The kernel schedules this thread apart, on either core.
//
// What it does:
// - A fixed schedule of `rps` requests a second; a tick that comes late sends
//   what is due, but never more than `maxInFlight` requests are open at once:
//   a slot that finds the cap reached is skipped and counted (`skipped`), not
//   sent in a burst that would time out on its own. The achieved rate is
//   reported (`achievedRps`), with how late requests were sent (`maxLateMs`).
// - A new TCP connection per request (no keep-alive): kube-proxy's rules and
//   the load balancer model pick an endpoint per connection, so each request
//   is one routing decision, and a switch shows in the very next request. A
//   keep-alive connection would stay on the pod it first reached (conntrack
//   keeps its DNAT), so the loop would measure that pod, not the switch.
// - Each request has its own short timeout (`timeoutMs`), told apart as a
//   connect timeout (no connection) or a response timeout (connected, no
//   answer); every failure is kept with its cause and its client address,
//   which the agent resolves to the pod that accepted the connection, if any.

import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';

/** One request's outcome. */
export interface Answer {
  /** Milliseconds from the loop's start to the request's send (one-off requests: 0). */
  t: number;
  /** Milliseconds from the send to the answer or the failure. */
  ms?: number;
  status?: number;
  pod?: string;
  revision?: string;
  /** The cause: an errno code, `HTTP <status>: <body>`, or `timeout`. */
  error?: string;
  /** For a timeout: whether it came before the connection was made or after. */
  phase?: 'connect' | 'response';
  /** The client's end of the request's connection (address:port), once connected. */
  from?: string;
  /** For a failure: the pod (and its revision) whose server accepted the connection, when one did. */
  via?: { pod: string; revision: string };
}

export interface LoopOptions {
  url: string;
  rps: number;
  timeoutMs: number;
  maxMs: number;
  maxInFlight: number;
}

export interface LoopReport {
  sent: number;
  ok: number;
  failed: number;
  /** Slots of the schedule not sent because maxInFlight requests were open. */
  skipped: number;
  byRevision: Record<string, number>;
  byPod: Record<string, number>;
  failures: Answer[];
  /** Every answer in the order requests were sent, once the loop has stopped; the latest RECENT before. */
  answers: Answer[];
  running: boolean;
  /** Epoch milliseconds of the loop's start: an answer's `t` counts from it. */
  startedAt: number;
  /** From the start to the stop (or now). */
  durationMs: number;
  /** Requests sent per second over durationMs. */
  achievedRps: number;
  /** How late the latest request was sent after its slot, at most, and the most open at once. */
  maxLateMs: number;
  maxInFlight: number;
  /** This thread's event-loop delay, p99 and max, in milliseconds. */
  loopDelayMs: { p99: number; max: number };
}

/** Messages between the agent and a loop's thread. */
export type ToLoop = { type: 'stats'; seq: number } | { type: 'stop'; seq: number };
export type FromLoop =
  | { type: 'report'; seq: number; report: LoopReport }
  | { type: 'failure'; t: number; from: string; sentAt: number };

const RECENT = 200;

/** One GET on a new connection, cut at timeoutMs. */
export function request(url: string, timeoutMs: number, t = 0): Promise<Answer> {
  const started = Date.now();
  return new Promise((resolve) => {
    let from: string | undefined;
    let settled = false;
    const done = (a: Omit<Answer, 't' | 'ms' | 'from'>) => {
      if (settled) return;
      settled = true;
      resolve({ t, ms: Date.now() - started, ...(from === undefined ? {} : { from }), ...a });
    };
    const req = http.get(url, { agent: false, signal: AbortSignal.timeout(timeoutMs) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => {
        try {
          const { pod, revision } = JSON.parse(body) as { pod?: string; revision?: string };
          if (res.statusCode === 200) return done({ status: 200, pod, revision });
        } catch {}
        done({ status: res.statusCode, error: `HTTP ${res.statusCode}: ${body.slice(0, 200)}` });
      });
      res.on('error', (err) => done(failure(err, from)));
    });
    req.on('socket', (socket) =>
      socket.once('connect', () => {
        from = `${socket.localAddress}:${socket.localPort}`;
      }),
    );
    req.on('error', (err) => done(failure(err, from)));
  });
}

function failure(err: unknown, from: string | undefined): Pick<Answer, 'error' | 'phase'> {
  const e = err as { code?: string; name?: string; message?: string };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') {
    return { error: 'timeout', phase: from === undefined ? 'connect' : 'response' };
  }
  return { error: e.code ?? e.message ?? String(err) };
}

export class TrafficLoop {
  private readonly answers: Answer[] = [];
  private readonly byRevision: Record<string, number> = {};
  private readonly byPod: Record<string, number> = {};
  private readonly failures: Answer[] = [];
  private ok = 0;
  private sent = 0;
  private slots = 0;
  private skipped = 0;
  private maxLateMs = 0;
  private maxOpen = 0;
  private running = true;
  private stoppedAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly start = Date.now();
  private readonly delay = monitorEventLoopDelay({ resolution: 10 });
  private readonly options: LoopOptions;
  private readonly onFailure: (a: Answer, sentAt: number) => void;

  constructor(options: LoopOptions, onFailure: (a: Answer, sentAt: number) => void = () => {}) {
    this.options = options;
    this.onFailure = onFailure;
    this.delay.enable();
    this.tick();
  }

  private tick(): void {
    if (!this.running) return;
    const { rps, maxMs, maxInFlight } = this.options;
    const elapsed = Date.now() - this.start;
    if (elapsed >= maxMs) return void this.stop();
    // Every slot due by now, each sent if the cap allows (a busy event loop sends late, not in a burst past the cap).
    while (this.slots < Math.floor((elapsed * rps) / 1000) + 1) {
      const slotAt = (this.slots * 1000) / rps;
      this.slots += 1;
      if (this.inFlight.size >= maxInFlight) {
        this.skipped += 1;
        continue;
      }
      this.maxLateMs = Math.max(this.maxLateMs, elapsed - slotAt);
      this.send(elapsed);
    }
    this.timer = setTimeout(() => this.tick(), Math.max(1, Math.floor(1000 / rps)));
  }

  private send(t: number): void {
    const index = this.sent++;
    const done = request(this.options.url, this.options.timeoutMs, t).then((a) => {
      this.answers[index] = a;
      if (a.error) {
        this.failures.push(a);
        this.onFailure(a, this.start + t);
      } else {
        this.ok += 1;
        this.byRevision[a.revision ?? ''] = (this.byRevision[a.revision ?? ''] ?? 0) + 1;
        this.byPod[a.pod ?? ''] = (this.byPod[a.pod ?? ''] ?? 0) + 1;
      }
      this.inFlight.delete(done);
    });
    this.inFlight.add(done);
    this.maxOpen = Math.max(this.maxOpen, this.inFlight.size);
  }

  async stop(): Promise<void> {
    if (this.running) this.stoppedAt = Date.now();
    this.running = false;
    clearTimeout(this.timer);
    await Promise.all([...this.inFlight]);
    this.delay.disable();
  }

  report(): LoopReport {
    const done = this.answers.filter(Boolean);
    const durationMs = (this.stoppedAt ?? Date.now()) - this.start;
    return {
      sent: this.sent,
      ok: this.ok,
      failed: this.failures.length,
      skipped: this.skipped,
      byRevision: { ...this.byRevision },
      byPod: { ...this.byPod },
      failures: [...this.failures],
      answers: this.running ? done.slice(-RECENT) : done,
      running: this.running,
      startedAt: this.start,
      durationMs,
      achievedRps: durationMs > 0 ? Math.round((this.sent * 10_000) / durationMs) / 10 : 0,
      maxLateMs: Math.round(this.maxLateMs),
      maxInFlight: this.maxOpen,
      loopDelayMs: {
        p99: Math.round(this.delay.percentile(99) / 1e6),
        max: Math.round(this.delay.max / 1e6),
      },
    };
  }
}

// As a worker thread: one loop, driven by the agent's messages.
if (parentPort && workerData) {
  const port = parentPort;
  // A failed request's connection is named to the agent at once: it knows which pod accepted it, and
  // the client port is used again within minutes.
  const loop = new TrafficLoop(workerData as LoopOptions, (a, sentAt) => {
    if (a.from) port.postMessage({ type: 'failure', t: a.t, from: a.from, sentAt } satisfies FromLoop);
  });
  port.on('message', (m: ToLoop) => {
    const reply = () => port.postMessage({ type: 'report', seq: m.seq, report: loop.report() } satisfies FromLoop);
    if (m.type === 'stats') reply();
    else void loop.stop().then(reply);
  });
}
