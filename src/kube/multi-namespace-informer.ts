// One cache over several namespaces, for an operator that may only list and
// watch in the namespaces it was given (Role/RoleBinding in each): one informer
// per namespace, read as one store, as controller-runtime's multi-namespace cache.
import type { Informer, InformerHandler, KubeObjectLike } from './informer.ts';

/** What the controller reads from a cache, whatever its scope. */
export type SharedInformer<T extends KubeObjectLike> = Pick<
  Informer<T>,
  | 'start'
  | 'stop'
  | 'hasSynced'
  | 'waitForSync'
  | 'addHandler'
  | 'addIndex'
  | 'byIndex'
  | 'get'
  | 'list'
  | 'listByNamespace'
  | 'size'
>;

export class MultiNamespaceInformer<T extends KubeObjectLike> implements SharedInformer<T> {
  private readonly informers: Map<string, Informer<T>>;

  constructor(namespaces: readonly string[], make: (namespace: string) => Informer<T>) {
    if (namespaces.length === 0) throw new Error('MultiNamespaceInformer needs at least one namespace');
    this.informers = new Map(namespaces.map((ns) => [ns, make(ns)]));
  }

  private get all(): Informer<T>[] {
    return [...this.informers.values()];
  }

  start(): void {
    for (const i of this.all) i.start();
  }

  stop(): void {
    for (const i of this.all) i.stop();
  }

  hasSynced(): boolean {
    return this.all.every((i) => i.hasSynced());
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all(this.all.map((i) => i.waitForSync(signal)));
  }

  addHandler(handler: InformerHandler<T>): () => void {
    const removers = this.all.map((i) => i.addHandler(handler));
    return () => {
      for (const remove of removers) remove();
    };
  }

  addIndex(name: string, fn: (obj: T) => string[]): void {
    for (const i of this.all) i.addIndex(name, fn);
  }

  byIndex(name: string, value: string): T[] {
    return this.all.flatMap((i) => i.byIndex(name, value));
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return namespace === undefined ? undefined : this.informers.get(namespace)?.get(namespace, name);
  }

  list(): T[] {
    return this.all.flatMap((i) => i.list());
  }

  listByNamespace(namespace: string): T[] {
    return this.informers.get(namespace)?.listByNamespace(namespace) ?? [];
  }

  get size(): number {
    return this.all.reduce((n, i) => n + i.size, 0);
  }
}
