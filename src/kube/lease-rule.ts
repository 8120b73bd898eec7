// The one rule for who holds a Lease, used by the leader election and the
// shard election alike, after client-go's leaderelection: a replica notes
// when it first saw the Lease's record (holder, duration, times, transitions)
// as it is, on its own monotonic clock, and the Lease expires a lease duration
// after that sighting unless the record changes meanwhile. The timestamps in
// the record (renewTime, acquireTime) are never read as times: they come from
// the holder's clock, which may be skewed any amount, so a renewTime in the
// future or far past only counts as a change, a renewal, like any other.
import * as k8s from '@kubernetes/client-node';

/** The election fields of a Lease, as the elections compare them. */
export interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions: number;
}

/** A Lease as this replica last read (or wrote) it, and since when its record has been the same. */
export interface Sighting {
  readonly lease: k8s.V1Lease;
  readonly record: LeaseRecord;
  /** The record serialized: any difference, renewTime included, is a change. */
  readonly raw: string;
  /** performance.now() when this record was first seen. */
  readonly at: number;
}

/**
 * Who holds a Lease at a moment, by this replica's clock: nobody (no holder),
 * this replica or another until a time, or its holder let it expire at a time.
 */
export type LeaseHold =
  | { readonly state: 'free' }
  | { readonly state: 'mine'; readonly until: number }
  | { readonly state: 'other'; readonly holder: string; readonly until: number }
  | { readonly state: 'expired'; readonly holder: string; readonly since: number };

/**
 * The Lease seen at `at`: the time of the earlier sighting is kept while the
 * record has not changed, so expiry counts from when it was first seen as it is.
 */
export function sight(lease: k8s.V1Lease, at: number, before?: Sighting): Sighting {
  const record = leaseRecord(lease);
  const raw = JSON.stringify(record);
  return { lease, record, raw, at: before?.raw === raw ? before.at : at };
}

/** When the Lease expires unless its record changes: a lease duration after it was first seen as it is. */
export function expiresAt(sighting: Sighting): number {
  return sighting.at + sighting.record.leaseDurationSeconds * 1000;
}

/** Who holds the Lease at `now` (performance.now()), for the replica named `identity`. */
export function leaseHold(sighting: Sighting, identity: string, now: number): LeaseHold {
  const holder = sighting.record.holderIdentity;
  if (holder === '') return { state: 'free' };
  const until = expiresAt(sighting);
  if (until <= now) return { state: 'expired', holder, since: until };
  return holder === identity ? { state: 'mine', until } : { state: 'other', holder, until };
}

/** Held (by anyone, this replica included) and not expired at `now`. */
export function isHeld(sighting: Sighting, now: number): boolean {
  const { state } = leaseHold(sighting, '', now);
  return state === 'mine' || state === 'other';
}

/** The record of a Lease; absent fields read as client-go reads them (no holder, no duration). */
export function leaseRecord(lease: k8s.V1Lease): LeaseRecord {
  const spec = lease.spec;
  return {
    holderIdentity: spec?.holderIdentity ?? '',
    leaseDurationSeconds: spec?.leaseDurationSeconds ?? 0,
    acquireTime: microTime(spec?.acquireTime),
    renewTime: microTime(spec?.renewTime),
    leaseTransitions: spec?.leaseTransitions ?? 0,
  };
}

// client-node types MicroTime fields as Dates but hands back the server's strings.
function microTime(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Date) return new k8s.V1MicroTime(value.getTime()).toISOString();
  return undefined;
}
