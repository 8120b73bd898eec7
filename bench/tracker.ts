// What the bench knows of the objects it waits on: a list and a watch (an
// informer) per kind and namespace, so that waiting on 10,000 objects costs
// the API server one watch, not a list every second.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  makeInformer,
} from '@kubernetes/client-node';

type Informer<T extends KubernetesObject> = ReturnType<typeof makeInformer<T>>;

/** Called with each object seen added or changed, and the moment (performance.now()) the bench saw it. */
export type OnChange<T> = (obj: T, at: number) => void;

export class Tracker<T extends KubernetesObject> {
  readonly objects = new Map<string, T>();
  private readonly informer: Informer<T>;
  private readonly waiters = new Set<() => void>();
  private stopped = false;

  constructor(
    kc: KubeConfig,
    path: string,
    list: () => Promise<KubernetesListObject<T>>,
    labelSelector?: string,
    onChange?: OnChange<T>,
  ) {
    this.informer = makeInformer(kc, path, list, labelSelector);
    const seen = (obj: T) => {
      const at = performance.now();
      this.objects.set(obj.metadata?.name ?? '', obj);
      onChange?.(obj, at);
      for (const wake of this.waiters) wake();
    };
    this.informer.on('add', seen);
    this.informer.on('update', seen);
    this.informer.on('delete', (obj) => this.objects.delete(obj.metadata?.name ?? ''));
    // The informer stops on an error (the API server busy, a watch cut): it lists again.
    this.informer.on('error', () => {
      if (!this.stopped) void sleep(1_000).then(() => this.informer.start());
    });
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): Promise<void> {
    this.stopped = true;
    return this.informer.stop();
  }

  /**
   * Resolves true once check() holds, checked on every event and every
   * second, or false after timeoutMs: the bench reports what never happened
   * instead of hanging on it.
   */
  until(check: () => boolean, timeoutMs: number): Promise<boolean> {
    if (check()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearInterval(tick);
        clearTimeout(bound);
        this.waiters.delete(wake);
        resolve(ok);
      };
      const wake = () => {
        if (check()) done(true);
      };
      const tick = setInterval(wake, 1_000);
      const bound = setTimeout(() => done(check()), timeoutMs);
      this.waiters.add(wake);
    });
  }
}
