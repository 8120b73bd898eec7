// What the traffic bench (bench/traffic.ts) counts, pure: given every answer a
// path gave and the switches written meanwhile, how many requests failed and
// how many were answered by a revision that was not supposed to serve. The
// rule, also in docs/benchmark.md:
//
// A switch is a write (a promote, an undo, an abort) that moves the path from
// one revision (`from`) to another (`to`); an abort moves nothing (`from` =
// `to`: the stable revision goes on serving). A request belongs to the latest
// switch written before it was sent. It may be answered:
// - before the first switch: by that switch's `from` only;
// - after a switch's write: by `from` or `to`, until the path has answered
//   `to` once (the request answered by it received); a request sent after that
//   by `to` only: from then on an answer of `from` is the old revision back;
// - by no other revision: an aborted preview, a third revision, an answer
//   without a revision are all "not supposed to serve".
// So a path's lag (kube-proxy's rules, the load balancer's registration) is
// allowed once, and any flapping back is counted, without a clock: both ends
// are the path's own answers.
//
// A switch is measured (its scenario's own) or a step that sets one up (the
// promote before each undo); requests are counted by the kind of the switch
// they belong to, those before the first switch as set-up.

/** One request on a path, as the traffic loop recorded it, in epoch milliseconds. */
export interface Sent {
  sentAt: number;
  answeredAt: number;
  revision?: string;
  error?: string;
  /** For a failed request: the revision of the pod that accepted its connection, if one did. */
  viaRevision?: string;
  /** For a timeout: before or after the connection was made. */
  phase?: 'connect' | 'response';
}

export interface Switch {
  measured: boolean;
  from: string;
  to: string;
  /** Epoch milliseconds: when the write was sent. */
  writtenAt: number;
}

export interface Tally {
  requests: number;
  failed: number;
  /**
   * Of the failed, those timed out after connecting: a server that accepted (or whose kernel
   * accepted) and did not answer in time, which on a starved machine is the harness's pods being
   * slow, where a routing fault shows as refused, reset, a 503 or a connect timeout.
   */
  slow: number;
  /** Answered by a revision not supposed to serve. */
  wrong: number;
  /** Failures by cause: the error, the timeout's phase, and which revision's pod took the connection (old/new). */
  causes: Record<string, number>;
  /** The wrong answers by revision. */
  wrongRevisions: Record<string, number>;
  /** Failures by when they were sent: whole seconds after the write of the switch they belong to (`+3s`). */
  failedAt: Record<string, number>;
}

export interface Verdict {
  measured: Tally;
  setup: Tally;
}

const emptyTally = (): Tally => ({
  requests: 0,
  failed: 0,
  slow: 0,
  wrong: 0,
  causes: {},
  wrongRevisions: {},
  failedAt: {},
});
const bump = (m: Record<string, number>, key: string) => {
  m[key] = (m[key] ?? 0) + 1;
};

/** The latest switch written at or before `at`, by index into the sorted list; -1 before the first. */
function switchAt(sorted: Switch[], at: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((sorted[mid] as Switch).writtenAt <= at) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** When the path first received an answer of each switch's `to`, from a request sent after its write. */
function firstAnswersOfNew(answers: Sent[], sorted: Switch[]): number[] {
  const first = sorted.map(() => Number.POSITIVE_INFINITY);
  for (const a of answers) {
    const i = switchAt(sorted, a.sentAt);
    const s = sorted[i];
    if (!s || a.error || a.revision !== s.to) continue;
    first[i] = Math.min(first[i] as number, a.answeredAt);
  }
  return first;
}

function role(s: Switch | undefined, revision: string | undefined): string {
  if (revision === undefined) return '';
  if (s && revision === s.to) return s.from === s.to ? ' via the stable revision' : ' via the new revision';
  if (s && revision === s.from) return ' via the old revision';
  return ` via revision ${revision}`;
}

export function verdict(answers: Sent[], switches: Switch[]): Verdict {
  const sorted = [...switches].sort((a, b) => a.writtenAt - b.writtenAt);
  const firstNew = firstAnswersOfNew(answers, sorted);
  const out: Verdict = { measured: emptyTally(), setup: emptyTally() };
  for (const a of answers) {
    const i = switchAt(sorted, a.sentAt);
    const s = sorted[i];
    const tally = s?.measured ? out.measured : out.setup;
    tally.requests += 1;
    if (a.error) {
      tally.failed += 1;
      if (a.error === 'timeout' && a.phase === 'response') tally.slow += 1;
      bump(tally.causes, `${a.error}${a.phase ? ` (${a.phase})` : ''}${role(s ?? sorted[0], a.viaRevision)}`);
      bump(tally.failedAt, s ? `+${Math.floor((a.sentAt - s.writtenAt) / 1000)}s` : 'before');
      continue;
    }
    const allowed = !s ? [sorted[0]?.from] : a.sentAt > (firstNew[i] as number) ? [s.to] : [s.from, s.to];
    if (a.revision === undefined || !allowed.includes(a.revision)) {
      tally.wrong += 1;
      bump(tally.wrongRevisions, a.revision ?? '(none)');
    }
  }
  return out;
}
