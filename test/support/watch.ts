// A watch that lasts as long as the test that records from it. client-node's
// Watch ends a stream that brought nothing for 30 s (its requestTimeoutMs, an
// inactivity bound) and tells only its done callback: a recorder on a quiet
// object (a Service during a lease takeover) then missed every later change.
// This one watches again from the last resourceVersion it saw, so no change
// between two streams is lost, until it is stopped.
import { Watch } from '@kubernetes/client-node';
import { kubeConfig } from './kube.ts';

/** An event's type as a recorder sees it: BOOKMARK and ERROR are handled here. */
export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

type Watched = { metadata?: { resourceVersion?: string } };
type WatchStatus = { kind?: string; code?: number };

/** After a stream that failed or ended at once, the next waits this long (so a refusal is no busy loop). */
const RETRY_MS = 200;

/**
 * Calls onChange with every change at path from its current state on (the
 * objects there first arrive as ADDED, as with a plain watch). Returns once
 * the first stream is open; the returned function stops it for good.
 */
export async function watchChanges<T>(
  path: string,
  query: Record<string, string>,
  onChange: (type: ChangeType, obj: T) => void,
): Promise<() => void> {
  let stopped = false;
  let resourceVersion: string | undefined;
  let controller: AbortController | undefined;
  let timer: NodeJS.Timeout | undefined;

  const onEvent = (type: string, obj: T & Watched & WatchStatus) => {
    if (type === 'ERROR') {
      // 410 Gone: the version is too old to resume from; start over from the current state.
      if (obj.code === 410) resourceVersion = undefined;
      return;
    }
    resourceVersion = obj.metadata?.resourceVersion ?? resourceVersion;
    if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') onChange(type, obj);
  };
  const start = async (): Promise<void> => {
    if (stopped) return;
    const opened = Date.now();
    const params = { ...query, allowWatchBookmarks: 'true', ...(resourceVersion ? { resourceVersion } : {}) };
    controller = await new Watch(kubeConfig()).watch(path, params, onEvent, (err: unknown) => {
      if (stopped) return;
      // Resumed from resourceVersion: a pause before the next stream loses no change.
      const pause = err || Date.now() - opened < RETRY_MS ? RETRY_MS : 0;
      timer = setTimeout(() => void start(), pause);
    });
    // Stopped while this stream was opening.
    if (stopped) controller.abort();
  };
  await start();
  return () => {
    stopped = true;
    clearTimeout(timer);
    controller?.abort();
  };
}
