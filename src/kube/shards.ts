// The pure rules of sharding (--shards N): which shard an App falls in, how
// many shards a replica should hold, and what it does about it on each tick.
// No I/O: the shard election (shard-election.ts) observes the Leases and acts.

/** The most shards a replica set may be split into (--shards). */
export const MAX_SHARDS = 256;

/** Labels every Lease of a sharded election carries, so one label-selected list sees them all. */
export const LABEL_ELECTION = 'teal.dev/leader-election-id';
export const LABEL_LEASE_ROLE = 'teal.dev/lease-role';
/** On a member Lease: the replica's --shards. Replicas that disagree must never both hold shards. */
export const LABEL_SHARDS = 'teal.dev/shards';

/**
 * FNV-1a, 32 bits, over the UTF-8 bytes: stable across processes, versions and
 * platforms (unlike a runtime's string hash), cheap, and well spread on short keys.
 */
const utf8 = new TextEncoder();

export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of utf8.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The shard of an App, by its workqueue key "namespace/name": the same in every replica. */
export function shardOf(appKey: string, shards: number): number {
  return fnv1a32(appKey) % shards;
}

/** The Lease that owns a shard. */
export function shardLeaseName(electionId: string, shard: number): string {
  return `${electionId}-shard-${shard}`;
}

/**
 * The Lease that says a replica is alive: its identity (hostname_random) made
 * into a valid name, so `kubectl get lease` shows which pod it is.
 */
export function memberLeaseName(electionId: string, identity: string): string {
  const suffix = identity
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '');
  return `${electionId}-member-${suffix || fnv1a32(identity).toString(16)}`.slice(0, 253).replace(/[-.]+$/, '');
}

/** How many shards one of `members` live replicas should hold at most: the rest is for the others. */
export function fairShare(shards: number, members: number): number {
  return Math.ceil(shards / Math.max(1, members));
}

/** What a replica knows of the shards on one tick. */
export interface ShardView {
  shards: number;
  /** Live replicas, this one included. */
  members: number;
  identity: string;
  /** Shards this replica leads (and is not handing back). */
  held: readonly number[];
  /** Shards this replica is trying to acquire. */
  candidates: readonly number[];
  /** Shards nobody validly holds: no Lease, no holder, or not renewed within its duration. */
  free: readonly number[];
}

/** What to do on this tick. */
export interface ShardMoves {
  /** Start trying to acquire these free shards. */
  acquire: number[];
  /** Stop trying for these: someone else got them, or this replica has enough. */
  abandon: number[];
  /** Drain, then release these: this replica holds more than its fair share. */
  handBack: number[];
}

/**
 * This replica's preference for a shard: each replica orders the shards
 * differently (rendezvous hashing), so replicas that see the same free shards
 * mostly try for different ones, and one that hands back gives its least preferred.
 */
export function preference(identity: string, shard: number): number {
  return fnv1a32(`${identity}/${shard}`);
}

/**
 * Holds at most the fair share: acquires free shards up to it, and hands back
 * one shard above it per tick (a new replica gets shards without every
 * other replica draining at once). Candidates count toward the share, so a
 * tick never tries for more than it may keep.
 */
export function balance(view: ShardView): ShardMoves {
  const share = fairShare(view.shards, view.members);
  const byPreference = (a: number, b: number) => preference(view.identity, b) - preference(view.identity, a);
  const free = new Set(view.free);
  const [keep, beyond] = split(
    view.candidates.filter((s) => free.has(s)),
    Math.max(0, share - view.held.length),
  );
  const abandon = [...view.candidates.filter((s) => !free.has(s)), ...beyond];
  const trying = new Set([...view.held, ...view.candidates]);
  const room = share - view.held.length - keep.length;
  const acquire =
    room > 0
      ? view.free
          .filter((s) => !trying.has(s))
          .sort(byPreference)
          .slice(0, room)
      : [];
  const excess = view.held.length - share;
  const handBack = excess > 0 ? [...view.held].sort(byPreference).slice(-1) : [];
  return { acquire, abandon, handBack };
}

function split<T>(items: readonly T[], n: number): [T[], T[]] {
  return [items.slice(0, n), items.slice(n)];
}

/** A shard whose Lease is validly held by an identity that is no live member: no replica reconciles its Apps. */
export interface StrandedShard {
  shard: number;
  lease: string;
  holder: string;
}

/** The longest holder identity repeated in logs, Events, metrics and /readyz: a Lease is anyone's to edit. */
export const MAX_HOLDER_SHOWN = 128;

/**
 * The shards held (validly, by their own Leases' record and duration) by
 * someone who is no live member of the election, of any --shards: a person's
 * edit, or a process that is not a Teal replica of this election. Each replica
 * leaves them alone until the Lease expires or is deleted (docs/sharding.md,
 * "A shard held by a stranger"): only the Lease's own record fences its holder.
 */
export function strandedShards(
  electionId: string,
  holders: ReadonlyMap<number, string>,
  liveMembers: ReadonlySet<string>,
): StrandedShard[] {
  return [...holders]
    .filter(([, holder]) => holder !== '' && !liveMembers.has(holder))
    .sort(([a], [b]) => a - b)
    .map(([shard, holder]) => ({
      shard,
      lease: shardLeaseName(electionId, shard),
      holder: holder.length > MAX_HOLDER_SHOWN ? `${holder.slice(0, MAX_HOLDER_SHOWN - 1)}…` : holder,
    }));
}
