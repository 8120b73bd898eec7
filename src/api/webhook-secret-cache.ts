// The values of Apps' webhook Secrets, kept briefly so that a delivery costs
// the API server nothing most of the time. Anyone can POST a webhook: without
// this, every forged delivery naming a known repository made one Secret GET
// per matching App before its signature could be checked.
//
// The bound, per Secret and per replica, whatever the traffic: one read when
// an entry is missing or expired, and at most one re-read (see reread) while
// it lives; concurrent deliveries share one in-flight read. A failed read is
// remembered for a shorter time, so an API server in trouble is not hammered
// by forged traffic either. Values are Buffers held here only: never logged.

/** How long a read value (or the fact that the Secret or its key is missing) is used. */
export const SECRET_TTL_MS = 15_000;
/** How long a failed read is answered from memory, with the same error, before it is tried again. */
export const SECRET_ERROR_TTL_MS = 2_000;
/** Secrets remembered at most; the least recently used is forgotten first. */
export const SECRET_CACHE_MAX_ENTRIES = 10_000;

/** Reads one Secret's webhook key: undefined when the Secret or the key is missing. */
export type SecretLoader = (namespace: string, name: string) => Promise<Buffer | undefined>;

export interface SecretCacheOptions {
  load: SecretLoader;
  ttlMs?: number;
  errorTtlMs?: number;
  maxEntries?: number;
  /** A monotonic clock in milliseconds; performance.now by default. */
  now?: () => number;
}

type State =
  | { kind: 'loading'; promise: Promise<Buffer | undefined> }
  | { kind: 'value'; value: Buffer | undefined }
  | { kind: 'error'; error: unknown };

interface Entry {
  /** When the read that gave (or gives) this entry started. */
  readAt: number;
  /** Whether this entry's lifetime has had its one re-read (it came from one). */
  reread: boolean;
  state: State;
}

/** Whether an entry can still answer at time now. */
export function isLive(
  entry: Pick<Entry, 'readAt' | 'state'>,
  now: number,
  ttlMs: number,
  errorTtlMs: number,
): boolean {
  switch (entry.state.kind) {
    case 'loading':
      return true;
    case 'value':
      return now - entry.readAt < ttlMs;
    case 'error':
      return now - entry.readAt < errorTtlMs;
  }
}

/**
 * Whether a delivery whose value did not verify may read the Secret again.
 * Why: a Secret rotated while its old value is cached would make a correctly
 * signed push fail until the entry expires (git hosts do not redeliver a 401).
 * So a mismatch re-reads, but only a value read before the delivery started
 * (one read for it is as fresh as can be), and only once per entry lifetime:
 * forged deliveries then cost at most one extra read per Secret per TTL.
 */
export function mayReread(entry: Pick<Entry, 'readAt' | 'reread' | 'state'>, deliveryStartedAt: number): boolean {
  return entry.state.kind === 'value' && !entry.reread && entry.readAt < deliveryStartedAt;
}

export class WebhookSecretCache {
  private readonly entries = new Map<string, Entry>();
  private readonly load: SecretLoader;
  private readonly ttlMs: number;
  private readonly errorTtlMs: number;
  private readonly maxEntries: number;
  readonly now: () => number;

  constructor(opts: SecretCacheOptions) {
    this.load = opts.load;
    this.ttlMs = opts.ttlMs ?? SECRET_TTL_MS;
    this.errorTtlMs = opts.errorTtlMs ?? SECRET_ERROR_TTL_MS;
    this.maxEntries = opts.maxEntries ?? SECRET_CACHE_MAX_ENTRIES;
    this.now = opts.now ?? (() => performance.now());
    for (const [option, value] of [
      ['ttlMs', this.ttlMs],
      ['errorTtlMs', this.errorTtlMs],
      ['maxEntries', this.maxEntries],
    ] as const) {
      if (!Number.isSafeInteger(value) || value <= 0)
        throw new Error(`webhook secret cache: ${option} must be a positive integer`);
    }
  }

  /** The Secret's value: remembered, being read, or read now. Rejects with the read's error. */
  get(namespace: string, name: string): Promise<Buffer | undefined> {
    const key = keyOf(namespace, name);
    const entry = this.entries.get(key);
    if (entry !== undefined && isLive(entry, this.now(), this.ttlMs, this.errorTtlMs)) {
      this.touch(key, entry);
      return answer(entry.state);
    }
    return this.read(key, namespace, name, false);
  }

  /**
   * A fresh value after one that did not verify, or undefined when a re-read
   * is not due (see mayReread); a read already under way is shared.
   */
  reread(namespace: string, name: string, deliveryStartedAt: number): Promise<Buffer | undefined> | undefined {
    const key = keyOf(namespace, name);
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.state.kind === 'loading') return entry.state.promise;
    if (!mayReread(entry, deliveryStartedAt)) return undefined;
    return this.read(key, namespace, name, true);
  }

  get size(): number {
    return this.entries.size;
  }

  private read(key: string, namespace: string, name: string, reread: boolean): Promise<Buffer | undefined> {
    const promise = this.load(namespace, name);
    const entry: Entry = { readAt: this.now(), reread, state: { kind: 'loading', promise } };
    this.touch(key, entry);
    // Settles the entry only if it is still this read's: it may have been evicted meanwhile.
    promise.then(
      (value) => this.settle(key, entry, { kind: 'value', value }),
      (error: unknown) => this.settle(key, entry, { kind: 'error', error }),
    );
    return promise;
  }

  private settle(key: string, entry: Entry, state: State): void {
    if (this.entries.get(key) === entry) entry.state = state;
  }

  /** Most recently used last; the oldest beyond the bound is dropped. */
  private touch(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }
}

const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

function answer(state: State): Promise<Buffer | undefined> {
  switch (state.kind) {
    case 'loading':
      return state.promise;
    case 'value':
      return Promise.resolve(state.value);
    case 'error':
      return Promise.reject(state.error);
  }
}
