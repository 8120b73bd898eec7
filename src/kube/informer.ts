// A list-then-watch cache of one resource type. Unlike client-node's
// makeInformer it asks for bookmarks, re-watches from the last resourceVersion
// instead of relisting, relists (with a diff) only on 410 Gone, and retries
// every other failure until stop().

import { setTimeout as sleep } from 'node:timers/promises';
import { HttpMethod, type KubeConfig, RequestContext, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { fetch } from 'undici';
import { Buckets } from './buckets.ts';
import { apiStatusOf, statusFromBody } from './errors.ts';

/** Object metadata as the API server sends it (JSON, timestamps as strings). */
export interface RawObjectMeta {
  name?: string;
  namespace?: string;
  resourceVersion?: string;
  uid?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

/** An object as the API server sends it, before the informer's transform. */
export interface RawObject {
  apiVersion?: string;
  kind?: string;
  metadata?: RawObjectMeta;
  [key: string]: unknown;
}

/** What a transformed object must keep: namespace, name and resourceVersion. */
export interface KubeObjectLike {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** The three fields every cached object keeps. */
export interface Meta {
  name: string;
  namespace: string;
  resourceVersion: string;
}

/** A trimmed object in a cache: what the caches hold besides Apps. */
export interface Cached<T> {
  metadata: Meta;
  value: T;
}

export type InformerLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface InformerOptions<T extends KubeObjectLike> {
  kubeConfig: KubeConfig;
  /** Collection path, e.g. /apis/apps/v1/replicasets or /api/v1/namespaces/ns/configmaps. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * Trims a raw object to what the caller reads; only the result is stored.
   * It must keep metadata.namespace, name and resourceVersion. Returning
   * undefined leaves the object out of the cache (as if it did not exist).
   */
  transform: (raw: RawObject) => T | undefined;
  logger?: InformerLogger;
  /**
   * Items per list page; default 2000. The API server answers a first page from its watch
   * cache, but a continued one from etcd: at 1,000 Apps (4.5 KB each) one page of 1,000 took it
   * 0.5 s where pages of 500 took 0.3 s and 2.7 to 3.5 s. A page is held at most twice at once.
   */
  pageSize?: number;
  /**
   * Server-side watch timeout; each watch asks for a random value between this and twice this,
   * at most WATCH_SECONDS_MAX. Default WATCH_SECONDS_DEFAULT.
   */
  watchTimeoutSeconds?: number;
  /** Re-watch when nothing, not even a bookmark, arrives for this long. Default 5 min. */
  watchdogMs?: number;
  /** Reconnect backoff: doubles from initialMs to maxMs, with jitter. Default 200 ms to 30 s. */
  backoff?: { initialMs?: number; maxMs?: number };
  /** A watch that stayed up this long resets the backoff. Default 10 s. */
  healthyWatchMs?: number;
  /** Told of each failed list before its retry (e.g. a 404: the resource is not served, its CRD absent). */
  onListError?: (err: unknown) => void;
}

export interface DeleteInfo {
  /** True when the delete was inferred by a relist: obj is the last state seen, not the final one. */
  finalStateUnknown: boolean;
}

export interface InformerHandler<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T, info: DeleteInfo): void;
}

export interface InformerStats {
  /** List requests (pages) sent. */
  lists: number;
  /** Watch requests opened. */
  watches: number;
  /** Full relists caused by 410 Gone. */
  relists: number;
  /** ADDED, MODIFIED and DELETED watch events received. */
  events: number;
  /** BOOKMARK watch events received. */
  bookmarks: number;
}

export interface RelistDiff<T> {
  added: { key: string; obj: T }[];
  updated: { key: string; old: T; obj: T }[];
  deleted: { key: string; obj: T }[];
}

/** Store key: "namespace/name", or "name" for cluster-scoped objects. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** What a relist changed, against the store: objects are equal when their resourceVersion is. */
export function diffRelist<T extends KubeObjectLike>(
  store: ReadonlyMap<string, T>,
  fresh: ReadonlyMap<string, T>,
): RelistDiff<T> {
  const diff: RelistDiff<T> = { added: [], updated: [], deleted: [] };
  for (const [key, obj] of fresh) {
    const old = store.get(key);
    if (old === undefined) diff.added.push({ key, obj });
    else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) diff.updated.push({ key, old, obj });
  }
  for (const [key, obj] of store) if (!fresh.has(key)) diff.deleted.push({ key, obj });
  return diff;
}

/** A failed list, or a watch's ERROR event; statusCode as on client-node's Watch errors, which apiStatusOf reads. */
class HttpError extends Error {
  readonly statusCode: number;
  readonly retryAfterMs: number | undefined;
  constructor(statusCode: number, message: string, retryAfterMs?: number) {
    super(message);
    this.name = 'HttpError';
    this.statusCode = statusCode;
    this.retryAfterMs = retryAfterMs;
  }
}

interface WatchResult {
  err: unknown;
  gone: boolean;
  /** Ended by restartWatch(): re-watch at once. */
  restarted: boolean;
  events: number;
  durationMs: number;
}

interface ListPage {
  items: RawObject[];
  resourceVersion: string | undefined;
  continueToken: string | undefined;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * The longest watch the informer asks the server for. client-node streams a watch through
 * undici, which drops a response body that stays quiet for 300 s (its bodyTimeout). A watch
 * of a resource the API server does not cache, such as Events, gets no bookmarks, so in a
 * quiet namespace it stays silent: it must end on the server's timeoutSeconds (a clean end,
 * resumed from the last resourceVersion) before the client's timer fails it. client-go asks
 * for 5 to 10 minutes because Go's HTTP client has no such timer.
 */
export const WATCH_SECONDS_MAX = 280;

/** The base of watchRequestSeconds unless an informer says otherwise: 140 to 280 s. */
export const WATCH_SECONDS_DEFAULT = 140;

/** The timeoutSeconds of one watch: base to twice base, spread by `random` in [0, 1), capped. */
export function watchRequestSeconds(base: number, random: number): number {
  return Math.min(Math.round(base * (1 + random)), WATCH_SECONDS_MAX);
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const errorName = (err: unknown): string | undefined =>
  isRecord(err) || err instanceof Error ? String((err as { name?: unknown }).name) : undefined;

/** Retry-After is either seconds or an HTTP date. */
function parseRetryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  if (!Number.isFinite(ms)) return undefined;
  // A broken proxy must not park the informer for hours.
  return Math.min(Math.max(ms, 0), 10 * 60_000);
}

/** An object's store key, from the metadata a transform keeps. */
const keyOf = (obj: KubeObjectLike): string => objectKey(obj.metadata?.namespace, obj.metadata?.name ?? '');

const namespaceOfKey = (key: string): string => {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
};

interface Index<T extends KubeObjectLike> {
  fn: (obj: T) => string[];
  values: Buckets<T>;
}

export class Informer<T extends KubeObjectLike> {
  readonly path: string;
  private readonly kc: KubeConfig;
  private readonly labelSelector: string | undefined;
  private readonly fieldSelector: string | undefined;
  private readonly transform: (raw: RawObject) => T | undefined;
  private readonly log: InformerLogger | undefined;
  private readonly pageSize: number;
  private readonly watchTimeoutSeconds: number;
  private readonly watchdogMs: number;
  private readonly backoffInitialMs: number;
  private readonly backoffMaxMs: number;
  private readonly healthyWatchMs: number;
  private readonly onListError: ((err: unknown) => void) | undefined;

  private readonly items = new Map<string, T>();
  private readonly byNamespace = new Buckets<T>(keyOf);
  private readonly indexes = new Map<string, Index<T>>();
  private readonly handlers = new Set<InformerHandler<T>>();
  private readonly waiters = new Set<Waiter>();
  private readonly counters: InformerStats = { lists: 0, watches: 0, relists: 0, events: 0, bookmarks: 0 };
  private rv: string | undefined;
  private synced = false;
  private run: AbortController | undefined;
  private currentWatch: AbortController | undefined;

  constructor(options: InformerOptions<T>) {
    this.kc = options.kubeConfig;
    this.path = options.path;
    this.labelSelector = options.labelSelector;
    this.fieldSelector = options.fieldSelector;
    this.transform = options.transform;
    this.log = options.logger;
    this.pageSize = options.pageSize ?? 2000;
    this.watchTimeoutSeconds = options.watchTimeoutSeconds ?? WATCH_SECONDS_DEFAULT;
    this.watchdogMs = options.watchdogMs ?? 5 * 60_000;
    this.backoffInitialMs = options.backoff?.initialMs ?? 200;
    this.backoffMaxMs = options.backoff?.maxMs ?? 30_000;
    this.healthyWatchMs = options.healthyWatchMs ?? 10_000;
    this.onListError = options.onListError;
  }

  // --- lifecycle ---

  /**
   * Lists (unless the cache is already synced) and watches until stop().
   * After a stop(), start() resumes watching from the last resourceVersion,
   * so changes made meanwhile arrive as events (or through a relist diff).
   */
  start(): void {
    if (this.run) return;
    const run = new AbortController();
    this.run = run;
    this.loop(run.signal).catch((err: unknown) => {
      // stop() ends the loop by aborting its sleep, which rejects.
      if (run.signal.aborted) return;
      // loop() handles its own errors; this is a bug guard, not a code path.
      this.log?.error({ err, path: this.path }, 'informer loop crashed');
    });
  }

  /** Aborts the watch and any pending request or retry timer; the cache keeps its contents. */
  stop(): void {
    this.run?.abort();
    this.run = undefined;
    this.currentWatch = undefined;
    for (const waiter of [...this.waiters]) waiter.reject(new Error(`informer for ${this.path} stopped`));
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first full list is in the cache and its add events were delivered. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => waiter.reject(signal?.reason);
      const waiter: Waiter = {
        resolve: () => {
          cleanup();
          resolve();
        },
        reject: (err) => {
          cleanup();
          reject(err);
        },
      };
      const cleanup = () => {
        this.waiters.delete(waiter);
        signal?.removeEventListener('abort', onAbort);
      };
      this.waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Aborts the current watch and watches again, from resourceVersion if given
   * (a stale one provokes 410 Gone and a relist). For tests and debugging; when
   * stopped it only sets where the next start() resumes.
   */
  restartWatch(resourceVersion?: string): void {
    this.currentWatch?.abort();
    if (resourceVersion !== undefined) this.rv = resourceVersion;
  }

  /** The last resourceVersion seen, from a list, an event or a bookmark. */
  get resourceVersion(): string | undefined {
    return this.rv;
  }

  stats(): InformerStats {
    return { ...this.counters };
  }

  // --- handlers ---

  /** Handlers run after the store is updated; add them before start() to see the initial adds. Returns a remover. */
  addHandler(handler: InformerHandler<T>): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  on(event: 'add', fn: (obj: T) => void): () => void;
  on(event: 'update', fn: (oldObj: T, newObj: T) => void): () => void;
  on(event: 'delete', fn: (obj: T, info: DeleteInfo) => void): () => void;
  on(
    event: 'add' | 'update' | 'delete',
    fn: ((obj: T) => void) | ((oldObj: T, newObj: T) => void) | ((obj: T, info: DeleteInfo) => void),
  ): () => void {
    switch (event) {
      case 'add':
        return this.addHandler({ onAdd: fn as (obj: T) => void });
      case 'update':
        return this.addHandler({ onUpdate: fn as (oldObj: T, newObj: T) => void });
      case 'delete':
        return this.addHandler({ onDelete: fn as (obj: T, info: DeleteInfo) => void });
    }
  }

  // --- store ---

  /** Pass an empty or undefined namespace for cluster-scoped objects. */
  get(namespace: string | undefined, name: string): T | undefined {
    return this.items.get(objectKey(namespace, name));
  }

  list(): T[] {
    return [...this.items.values()];
  }

  listByNamespace(namespace: string): T[] {
    return this.byNamespace.values(namespace);
  }

  get size(): number {
    return this.items.size;
  }

  /** Adds a secondary index; fn returns the index values an object is found under. */
  addIndex(name: string, fn: (obj: T) => string[]): void {
    if (this.indexes.has(name)) throw new Error(`index ${name} already exists`);
    const index: Index<T> = { fn, values: new Buckets<T>(keyOf) };
    for (const [key, obj] of this.items) for (const value of fn(obj)) index.values.add(value, key, obj);
    this.indexes.set(name, index);
  }

  byIndex(name: string, value: string): T[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`no index named ${name}`);
    return index.values.values(value);
  }

  private put(key: string, obj: T, old: T | undefined): void {
    if (old !== undefined) this.unindex(key, old);
    this.items.set(key, obj);
    this.byNamespace.add(namespaceOfKey(key), key, obj);
    for (const index of this.indexes.values()) for (const value of index.fn(obj)) index.values.add(value, key, obj);
  }

  private remove(key: string, old: T): void {
    this.items.delete(key);
    this.unindex(key, old);
  }

  private unindex(key: string, old: T): void {
    this.byNamespace.remove(namespaceOfKey(key), key);
    for (const index of this.indexes.values()) for (const value of index.fn(old)) index.values.remove(value, key);
  }

  // --- dispatch ---

  private call(what: string, fn: () => void): void {
    try {
      const result: unknown = fn();
      // An async handler's rejection must not become an unhandled rejection.
      if (result instanceof Promise) {
        result.catch((err: unknown) => this.log?.error({ err, path: this.path }, `informer ${what} handler failed`));
      }
    } catch (err) {
      this.log?.error({ err, path: this.path }, `informer ${what} handler failed`);
    }
  }

  private emitAdd(obj: T): void {
    for (const h of this.handlers) if (h.onAdd) this.call('add', () => h.onAdd?.(obj));
  }

  private emitUpdate(old: T, obj: T): void {
    for (const h of this.handlers) if (h.onUpdate) this.call('update', () => h.onUpdate?.(old, obj));
  }

  private emitDelete(obj: T, finalStateUnknown: boolean): void {
    for (const h of this.handlers) if (h.onDelete) this.call('delete', () => h.onDelete?.(obj, { finalStateUnknown }));
  }

  // --- list and watch ---

  private backoffMs(failures: number): number {
    const ms = Math.min(this.backoffMaxMs, this.backoffInitialMs * 2 ** Math.min(failures, 30));
    // Jitter keeps many informers that failed together from retrying together.
    return ms / 2 + (Math.random() * ms) / 2;
  }

  private async loop(signal: AbortSignal): Promise<void> {
    let failures = 0;
    let needList = !this.synced || this.rv === undefined;
    while (!signal.aborted) {
      if (needList) {
        try {
          await this.listAndSync(signal);
          needList = false;
        } catch (err) {
          if (signal.aborted) return;
          // Honour Retry-After, but never below the backoff, so "Retry-After: 0" cannot spin.
          const retryAfter = err instanceof HttpError ? (err.retryAfterMs ?? 0) : 0;
          const delay = Math.max(retryAfter, this.backoffMs(failures++));
          this.log?.warn({ err, path: this.path, delayMs: Math.round(delay) }, 'informer list failed; retrying');
          this.onListError?.(err);
          await sleep(delay, undefined, { signal });
          continue;
        }
      }

      if (signal.aborted) return;
      const result = await this.watchOnce(signal);
      if (signal.aborted) return;
      const healthy = result.durationMs >= this.healthyWatchMs;
      if (healthy) failures = 0;
      let delay = 0;
      if (result.restarted) {
        this.log?.debug({ path: this.path }, 'informer watch restarted');
      } else if (result.gone) {
        needList = true;
        this.counters.relists++;
        this.log?.info({ path: this.path, resourceVersion: this.rv }, 'informer resourceVersion expired; relisting');
        if (!healthy) delay = this.backoffMs(failures++);
      } else if (result.err == null) {
        // The server's timeoutSeconds ran out: carry on from the last resourceVersion.
        if (!healthy && result.events === 0) delay = this.backoffMs(failures++);
      } else if (errorName(result.err) === 'TimeoutError') {
        this.log?.warn({ path: this.path, watchdogMs: this.watchdogMs }, 'informer watch went silent; re-watching');
        if (!healthy) delay = this.backoffMs(failures++);
      } else {
        delay = this.backoffMs(failures++);
        this.log?.warn(
          { err: result.err, path: this.path, delayMs: Math.round(delay) },
          'informer watch failed; reconnecting',
        );
      }
      if (delay > 0) await sleep(delay, undefined, { signal });
    }
  }

  /**
   * Lists every page, then brings the store and the handlers in line with the result.
   * The next page is asked for as soon as a page's continue token is known, before its
   * items are transformed: the API server's time on the next page overlaps ours on this
   * one (at 1,000 Apps a page took the API server about 350 ms and this process as long
   * again). At most two pages are held: the one being transformed and the next in flight.
   */
  private async listAndSync(signal: AbortSignal): Promise<void> {
    const fresh = new Map<string, T>();
    let continueToken: string | undefined;
    let resourceVersion: string | undefined;
    let next: Promise<ListPage> | undefined = this.fetchPage(undefined, signal);
    while (next !== undefined) {
      let page: ListPage;
      try {
        page = await next;
      } catch (err) {
        // An expired continue token means starting the list over, not failing.
        if (continueToken !== undefined && apiStatusOf(err)?.code === 410) {
          this.log?.info({ path: this.path }, 'informer list continue token expired; listing again');
          fresh.clear();
          continueToken = undefined;
          next = this.fetchPage(undefined, signal);
          continue;
        }
        throw err;
      }
      resourceVersion = page.resourceVersion;
      continueToken = page.continueToken;
      next = continueToken === undefined ? undefined : this.fetchPage(continueToken, signal);
      // Awaited on the next turn; should a transform throw first, its failure must not go unhandled.
      next?.catch(() => {});
      for (const raw of page.items) {
        const name = raw.metadata?.name;
        if (!name) continue;
        const obj = this.transform(raw);
        if (obj !== undefined) fresh.set(objectKey(raw.metadata?.namespace, name), obj);
      }
    }
    if (signal.aborted) return;

    const diff = diffRelist(this.items, fresh);
    for (const { key, obj } of diff.deleted) this.remove(key, obj);
    for (const { key, old, obj } of diff.updated) this.put(key, obj, old);
    for (const { key, obj } of diff.added) this.put(key, obj, undefined);
    this.rv = resourceVersion;
    for (const { obj } of diff.deleted) this.emitDelete(obj, true);
    for (const { old, obj } of diff.updated) this.emitUpdate(old, obj);
    for (const { obj } of diff.added) this.emitAdd(obj);
    this.log?.debug(
      {
        path: this.path,
        resourceVersion,
        items: fresh.size,
        added: diff.added.length,
        updated: diff.updated.length,
        deleted: diff.deleted.length,
      },
      'informer listed',
    );
    if (!this.synced) {
      this.synced = true;
      for (const waiter of [...this.waiters]) waiter.resolve();
    }
  }

  private async fetchPage(continueToken: string | undefined, signal: AbortSignal): Promise<ListPage> {
    // Counted when asked for, before the first await: a page asked for ahead shows at once.
    this.counters.lists++;
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error('no current cluster in the kubeconfig');
    const url = new URL(cluster.server + this.path);
    url.searchParams.set('limit', String(this.pageSize));
    if (continueToken) url.searchParams.set('continue', continueToken);
    if (this.labelSelector) url.searchParams.set('labelSelector', this.labelSelector);
    if (this.fieldSelector) url.searchParams.set('fieldSelector', this.fieldSelector);
    const ctx = new RequestContext(url.toString(), HttpMethod.GET);
    ctx.setHeaderParam('Accept', 'application/json');
    await this.kc.applySecurityAuthentication(ctx);
    const dispatcher = ctx.getDispatcher();
    // The dispatcher belongs to the KubeConfig (one shared agent, see kube/client.ts): never close it here.
    // The KubeConfig may bound each request (see kube/client.ts): a list is held to it as well.
    const bounded = ctx.getSignal();
    const res = await fetch(url, {
      method: 'GET',
      headers: ctx.getHeaders(),
      dispatcher,
      signal: bounded ? AbortSignal.any([signal, bounded]) : signal,
    });
    if (res.status !== 200) {
      const text = await res.text().catch(() => '');
      const message = statusFromBody(res.status, text).message || text || res.statusText;
      const retryAfter = res.status === 429 ? parseRetryAfter(res.headers.get('retry-after')) : undefined;
      throw new HttpError(res.status, `list ${this.path}: ${res.status} ${message}`, retryAfter);
    }
    const body: unknown = await res.json();
    if (!isRecord(body) || !Array.isArray(body.items)) throw new Error(`list ${this.path}: not a list`);
    const meta = isRecord(body.metadata) ? body.metadata : {};
    // List items come without kind and apiVersion; watch objects have them. Keep one shape.
    const kind = typeof body.kind === 'string' ? body.kind.replace(/List$/, '') : undefined;
    const apiVersion = typeof body.apiVersion === 'string' ? body.apiVersion : undefined;
    const items: RawObject[] = [];
    for (const item of body.items) {
      if (!isRecord(item)) continue;
      const raw: RawObject = item;
      if (raw.kind === undefined && kind) raw.kind = kind;
      if (raw.apiVersion === undefined && apiVersion) raw.apiVersion = apiVersion;
      items.push(raw);
    }
    return {
      items,
      resourceVersion: typeof meta.resourceVersion === 'string' ? meta.resourceVersion : undefined,
      continueToken: typeof meta.continue === 'string' && meta.continue !== '' ? meta.continue : undefined,
    };
  }

  /** One watch request, from the last resourceVersion; resolves when it ends for any reason. */
  private watchOnce(signal: AbortSignal): Promise<WatchResult> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve({ err: undefined, gone: false, restarted: false, events: 0, durationMs: 0 });
      const started = Date.now();
      const local = new AbortController();
      this.currentWatch = local;
      let controller: AbortController | undefined;
      let finished = false;
      let events = 0;
      const finish = (err: unknown, gone: boolean) => {
        if (finished) return;
        finished = true;
        signal.removeEventListener('abort', onStop);
        local.signal.removeEventListener('abort', onRestart);
        if (this.currentWatch === local) this.currentWatch = undefined;
        controller?.abort();
        resolve({
          err,
          gone: gone || apiStatusOf(err)?.code === 410,
          restarted: local.signal.aborted && !signal.aborted,
          events,
          durationMs: Date.now() - started,
        });
      };
      const onStop = () => finish(undefined, false);
      const onRestart = () => finish(undefined, false);
      signal.addEventListener('abort', onStop, { once: true });
      local.signal.addEventListener('abort', onRestart, { once: true });

      const watch = new Watch(this.kc);
      // Watch's inactivity timer is our watchdog; its 30 s default is shorter than the bookmark interval.
      (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = this.watchdogMs;
      const timeoutSeconds = watchRequestSeconds(this.watchTimeoutSeconds, Math.random());
      const query = {
        resourceVersion: this.rv,
        allowWatchBookmarks: true,
        timeoutSeconds,
        labelSelector: this.labelSelector,
        fieldSelector: this.fieldSelector,
      };
      this.counters.watches++;
      watch
        .watch(
          this.path,
          query,
          (type: string, obj: unknown) => {
            if (finished) return;
            if (type === 'ERROR') {
              const status = isRecord(obj) ? obj : {};
              const code = typeof status.code === 'number' ? status.code : 500;
              const message = typeof status.message === 'string' ? status.message : 'watch error';
              finish(new HttpError(code, message), code === 410 || status.reason === 'Expired');
              return;
            }
            if (!isRecord(obj)) return;
            events++;
            try {
              this.handleEvent(type, obj);
            } catch (err) {
              // Watch would swallow this silently; a throwing transform is a bug worth hearing about.
              this.log?.error({ err, path: this.path, type }, 'informer failed to apply a watch event');
            }
          },
          (err: unknown) => finish(err, false),
        )
        .then(
          (c) => {
            controller = c;
            // Ended while connecting: close what Watch opened.
            if (finished) c.abort();
          },
          (err: unknown) => finish(err, false),
        );
    });
  }

  private handleEvent(type: string, raw: RawObject): void {
    const rv = raw.metadata?.resourceVersion;
    if (type === 'BOOKMARK') {
      this.counters.bookmarks++;
      if (rv) this.rv = rv;
      return;
    }
    this.counters.events++;
    // Before the handlers run, so they see the resourceVersion of their event.
    if (rv) this.rv = rv;
    const name = raw.metadata?.name;
    if (!name) return;
    const key = objectKey(raw.metadata?.namespace, name);
    const old = this.items.get(key);
    if (type === 'ADDED' || type === 'MODIFIED') {
      const obj = this.transform(raw);
      if (obj === undefined) {
        // No longer wanted by the transform: to handlers it is gone.
        if (old !== undefined) {
          this.remove(key, old);
          this.emitDelete(old, false);
        }
      } else if (old === undefined) {
        this.put(key, obj, undefined);
        this.emitAdd(obj);
      } else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) {
        this.put(key, obj, old);
        this.emitUpdate(old, obj);
      }
    } else if (type === 'DELETED') {
      if (old !== undefined) {
        this.remove(key, old);
        this.emitDelete(this.transform(raw) ?? old, false);
      }
    }
  }
}
