// The one lease rule of both elections (src/kube/lease-rule.ts): who holds a
// Lease is judged from when this replica first saw its record, on its own
// clock, never from the holder's timestamps.
import type { V1Lease } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { expiresAt, isHeld, leaseHold, leaseRecord, sight } from '../../src/kube/lease-rule.ts';

const SECOND = 1000;

function lease(spec: V1Lease['spec'], resourceVersion = '1'): V1Lease {
  return { metadata: { name: 'teal-controller', namespace: 'teal-system', resourceVersion }, spec };
}

/** A Lease as a holder renews it: its clock's time in renewTime (a string, as the server hands it back). */
function held(holder: string, renewTime: string, seconds = 15): V1Lease {
  return lease({
    holderIdentity: holder,
    leaseDurationSeconds: seconds,
    acquireTime: '2026-11-26T20:00:00.000000Z' as never,
    renewTime: renewTime as never,
    leaseTransitions: 2,
  });
}

describe('the lease rule', () => {
  it('a Lease held by another is theirs for a lease duration after it was first seen, then expired', () => {
    const seen = sight(held('b', '2026-11-26T20:00:01.000000Z'), 100 * SECOND);
    expect(leaseHold(seen, 'a', 100 * SECOND)).toEqual({ state: 'other', holder: 'b', until: 115 * SECOND });
    expect(leaseHold(seen, 'a', 115 * SECOND - 1)).toEqual({ state: 'other', holder: 'b', until: 115 * SECOND });
    expect(leaseHold(seen, 'a', 115 * SECOND)).toEqual({ state: 'expired', holder: 'b', since: 115 * SECOND });
    expect(expiresAt(seen)).toBe(115 * SECOND);
  });

  it('the same Lease is this replica’s own when its identity holds it', () => {
    const seen = sight(held('a', '2026-11-26T20:00:01.000000Z'), 0);
    expect(leaseHold(seen, 'a', 14 * SECOND)).toEqual({ state: 'mine', until: 15 * SECOND });
    expect(leaseHold(seen, 'a', 15 * SECOND)).toEqual({ state: 'expired', holder: 'a', since: 15 * SECOND });
  });

  it('a Lease with no holder is free whatever its duration (a released Lease)', () => {
    const released = sight(lease({ holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 3 }), 0);
    expect(leaseHold(released, 'a', 0)).toEqual({ state: 'free' });
    expect(leaseHold(sight(lease({}), 0), 'a', 0)).toEqual({ state: 'free' });
    expect(isHeld(released, 0)).toBe(false);
  });

  it('a holder without a duration has let it expire at once, as client-go reads it', () => {
    const seen = sight(lease({ holderIdentity: 'b' }), 50 * SECOND);
    expect(leaseHold(seen, 'a', 50 * SECOND)).toEqual({ state: 'expired', holder: 'b', since: 50 * SECOND });
  });

  it('seen again unchanged, it keeps its first sighting: expiry does not slide with each read', () => {
    const first = sight(held('b', '2026-11-26T20:00:01.000000Z'), 0);
    // A new resourceVersion with the same record (another field changed) is no renewal either.
    const again = sight(
      { ...held('b', '2026-11-26T20:00:01.000000Z'), metadata: { resourceVersion: '9' } },
      10 * SECOND,
      first,
    );
    expect(again.at).toBe(0);
    expect(again.lease.metadata?.resourceVersion).toBe('9');
    expect(leaseHold(again, 'a', 15 * SECOND).state).toBe('expired');
  });

  it('any change of the record is a renewal: the lease runs again from when the change was seen', () => {
    const first = sight(held('b', '2026-11-26T20:00:01.000000Z'), 0);
    const renewed = sight(held('b', '2026-11-26T20:00:03.000000Z'), 10 * SECOND, first);
    expect(renewed.at).toBe(10 * SECOND);
    expect(leaseHold(renewed, 'a', 24 * SECOND)).toEqual({ state: 'other', holder: 'b', until: 25 * SECOND });
    const taken = sight(held('c', '2026-11-26T20:00:03.000000Z'), 12 * SECOND, renewed);
    expect(leaseHold(taken, 'a', 26 * SECOND)).toEqual({ state: 'other', holder: 'c', until: 27 * SECOND });
  });

  it('a sighting with no earlier one (a write of this replica) starts the clock anew', () => {
    const first = sight(held('a', '2026-11-26T20:00:01.000000Z'), 0);
    const written = sight(first.lease, 10 * SECOND);
    expect(written.at).toBe(10 * SECOND);
  });

  describe('clock skew: the holder’s timestamps never count as times', () => {
    it('a renewTime far in the future does not keep a dead holder’s Lease for longer', () => {
      const seen = sight(held('b', '2999-01-01T00:00:00.000000Z'), 0);
      expect(leaseHold(seen, 'a', 15 * SECOND)).toEqual({ state: 'expired', holder: 'b', since: 15 * SECOND });
    });

    it('a renewTime far in the past does not make a live holder’s Lease expired', () => {
      const seen = sight(held('b', '1970-01-01T00:00:00.000000Z'), 100 * SECOND);
      expect(leaseHold(seen, 'a', 100 * SECOND).state).toBe('other');
      expect(isHeld(seen, 114 * SECOND)).toBe(true);
    });

    it('a renewal whose renewTime goes backwards (the holder’s clock stepped back) is still a renewal', () => {
      const first = sight(held('b', '2026-11-26T20:00:05.000000Z'), 0);
      const renewed = sight(held('b', '2026-11-26T19:00:00.000000Z'), 14 * SECOND, first);
      expect(leaseHold(renewed, 'a', 20 * SECOND)).toEqual({ state: 'other', holder: 'b', until: 29 * SECOND });
    });
  });

  it('reads MicroTime as the server sends it (a string) and as client-node types it (a Date) alike', () => {
    const asString = leaseRecord(held('b', '2026-11-26T20:00:01.123456Z'));
    const asDate = leaseRecord(
      lease({
        holderIdentity: 'b',
        leaseDurationSeconds: 15,
        acquireTime: new Date('2026-11-26T20:00:00.000Z'),
        renewTime: new Date('2026-11-26T20:00:01.123Z'),
        leaseTransitions: 2,
      }),
    );
    expect(asString.renewTime).toBe('2026-11-26T20:00:01.123456Z');
    expect(asDate.renewTime).toBe('2026-11-26T20:00:01.123000Z');
    expect(asDate.acquireTime).toBe('2026-11-26T20:00:00.000000Z');
  });
});
