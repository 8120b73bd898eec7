// The informer's secondary indexes (and its namespace index): index value ->
// the objects found under it, by store key.
//
// An index value most often finds one object (an App's one ReplicaSet, a
// namespace's one App), so its bucket is that object itself until a second
// one comes: a Map per value would cost about 90 bytes of heap, one per App
// in the ReplicaSet index. A lone object's store key is read back from it
// (keyOf), not kept beside it, which would cost an object of its own.

type Bucket<T> = T | Map<string, T>;

export class Buckets<T extends object> {
  private readonly byValue = new Map<string, Bucket<T>>();
  private readonly keyOf: (obj: T) => string;

  /** keyOf: an object's store key, as the informer's store has it. */
  constructor(keyOf: (obj: T) => string) {
    this.keyOf = keyOf;
  }

  /** Puts obj under value, replacing what was there under the same key. */
  add(value: string, key: string, obj: T): void {
    const bucket = this.byValue.get(value);
    if (bucket === undefined) this.byValue.set(value, obj);
    else if (bucket instanceof Map) bucket.set(key, obj);
    else if (this.keyOf(bucket) === key) this.byValue.set(value, obj);
    else this.byValue.set(value, this.pair(bucket, key, obj));
  }

  private pair(lone: T, key: string, obj: T): Map<string, T> {
    const both = new Map<string, T>();
    both.set(this.keyOf(lone), lone);
    both.set(key, obj);
    return both;
  }

  remove(value: string, key: string): void {
    const bucket = this.byValue.get(value);
    if (bucket === undefined) return;
    if (!(bucket instanceof Map)) {
      if (this.keyOf(bucket) === key) this.byValue.delete(value);
      return;
    }
    bucket.delete(key);
    if (bucket.size === 0) this.byValue.delete(value);
  }

  /** The objects under value, in the order they were first added. */
  values(value: string): T[] {
    const bucket = this.byValue.get(value);
    if (bucket === undefined) return [];
    return bucket instanceof Map ? [...bucket.values()] : [bucket];
  }

  /** How many index values have objects. */
  get size(): number {
    return this.byValue.size;
  }
}
