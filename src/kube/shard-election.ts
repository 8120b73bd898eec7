// Sharded leader election (--shards N > 1): one Lease per shard, each won and
// renewed by its own LeaderElector, so a replica leads some shards and writes
// only for the Apps in them. Each replica also renews a member Lease; on
// every tick (the retry period) it lists the election's Leases by label, counts
// the live members, and moves toward its fair share (shards.ts): it tries for
// free shards below it and hands one back above it, draining that shard's
// work before releasing its Lease, so no write of this replica lands once
// another replica holds the shard. A shard lost any other way ends the process
// (the manager fences and exits), as a lost lease does without sharding.
//
// The shard of an App depends on N, so replicas that run different --shards
// (a rolling update that changes it) must never hold shards at the same time:
// a replica counts only the members of its own N, and acquires nothing while a
// live member of another N is seen, nor while the unsharded Lease (the
// --leader-election-id of --shards 1) is held (docs/sharding.md).
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { alsoAbortedBy, withDeadline } from './client.ts';
import { errorMessage, ignoreNotFound, isConflict, isNotFound } from './errors.ts';
import { type LeaderElectionLogger, LeaderElector } from './leader-election.ts';
import { expiresAt, isHeld, leaseHold, type Sighting, sight } from './lease-rule.ts';
import {
  balance,
  LABEL_ELECTION,
  LABEL_LEASE_ROLE,
  LABEL_SHARDS,
  memberLeaseName,
  type ShardView,
  type StrandedShard,
  shardLeaseName,
  shardOf,
  strandedShards,
} from './shards.ts';

export interface ShardElectionOptions {
  kubeConfig: k8s.KubeConfig;
  namespace: string;
  /** --leader-election-id: the prefix of every Lease name, and their label's value. */
  electionId: string;
  identity: string;
  shards: number;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  logger: LeaderElectionLogger;
  /** The manager's side: started at once (the controller runs, reconciling only held shards). */
  onStartedLeading: () => void;
  /** Called when a shard is lost other than by handing it back: the manager fences and exits. */
  onStoppedLeading: () => void;
  /** A shard was won: its Apps are to be reconciled. */
  onAcquired: (shard: number) => void;
  /** Resolves once nothing of this replica writes for the shard any more (mayWrite is already false for it). */
  drain: (shard: number) => Promise<void>;
  /** For leader_election_master_status, per shard Lease. */
  onShardLeadership?: (lease: string, leading: boolean) => void;
  /** For teal_shards_owned. */
  onOwnedChange?: (owned: number) => void;
  /**
   * The shards held by no live member, on every tick they change: all of
   * them, and those new since the last (for teal_shard_stranded and a
   * Warning Event on the Lease, whose uid is given).
   */
  onStranded?: (stranded: readonly StrandedShard[], fresh: readonly (StrandedShard & { uid?: string })[]) => void;
}

/**
 * A shard this replica tries for or holds. candidate: its elector polls;
 * leading: it writes; handingBack: draining (no new writes), the Lease still
 * renewed; releasing: drained, the Lease being handed over.
 */
interface Slot {
  shard: number;
  state: 'candidate' | 'leading' | 'handingBack' | 'releasing';
  elector: LeaderElector;
}

const now = (): number => performance.now();
const strandedKey = (s: StrandedShard): string => `${s.shard}\n${s.holder}`;

export class ShardElection {
  private readonly o: ShardElectionOptions;
  private readonly api: k8s.CoordinationV1Api;
  private readonly slots = new Map<number, Slot>();
  /** The election's Leases as last listed, by name, each with when its record was first seen (lease-rule.ts). */
  private readonly seen = new Map<string, Sighting>();
  private readonly abort = new AbortController();
  private readonly memberName: string;
  private loop?: Promise<void>;
  private stopping?: Promise<void>;
  private ticks = 0;
  /** The unsharded Lease (--shards 1's), as last read. */
  private unsharded?: Sighting;
  /** Why acquiring waits, as last logged: said once, not on every tick. */
  private waitingFor = '';
  /** The shards held by no live member, as last told. */
  private strandedNow: StrandedShard[] = [];
  /** Since when (monotonic) each shard and holder has been held by no live member. */
  private strandedSince = new Map<string, number>();

  constructor(options: ShardElectionOptions) {
    this.o = options;
    this.api = options.kubeConfig.makeApiClient(k8s.CoordinationV1Api);
    this.memberName = memberLeaseName(options.electionId, options.identity);
  }

  /** True while this replica leads at least one shard: /readyz says so. */
  isLeader(): boolean {
    return [...this.slots.values()].some((s) => s.state === 'leading' && s.elector.isLeader());
  }

  /** Whether this replica may write for the App: it leads its shard, within the renew deadline, and is not handing it back. */
  mayWrite(appKey: string): boolean {
    const slot = this.slots.get(shardOf(appKey, this.o.shards));
    return slot?.state === 'leading' && slot.elector.isLeader();
  }

  /** The shards a holder keeps that is no live member (strandedShards): /readyz names them. */
  stranded(): readonly StrandedShard[] {
    return this.strandedNow;
  }

  /** The shards this replica leads. */
  owned(): number[] {
    return [...this.slots.values()].filter((s) => s.state === 'leading').map((s) => s.shard);
  }

  async start(): Promise<void> {
    if (this.loop || this.stopping) throw new Error('shard election already started or stopped');
    this.o.logger.info(
      { shards: this.o.shards, member: `${this.o.namespace}/${this.memberName}`, identity: this.o.identity },
      'joining the sharded election',
    );
    this.o.onOwnedChange?.(0);
    this.o.onStartedLeading();
    const signal = this.abort.signal;
    this.loop = this.run(signal).catch((err: unknown) => {
      if (!signal.aborted) this.o.logger.error({ err: errorMessage(err) }, 'shard election loop failed');
    });
  }

  /** Stops trying; each held shard's Lease is released (or left to expire), and so is the member Lease. */
  stop({ release }: { release: boolean }): Promise<void> {
    this.stopping ??= this.shutdown(release);
    return this.stopping;
  }

  private async shutdown(release: boolean): Promise<void> {
    this.abort.abort(new Error('shard election stopped'));
    await this.loop;
    const slots = [...this.slots.values()];
    await Promise.all(slots.map((s) => s.elector.stop({ release })));
    this.slots.clear();
    this.o.onOwnedChange?.(0);
    if (release) await this.leave();
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        // Its requests (the member Lease's renewal among them) end by the renew deadline, or on stop.
        await withDeadline(this.o.renewDeadlineMs, signal, (attempt) => this.tick(attempt));
      } catch (err) {
        if (!signal.aborted) this.o.logger.warn({ err: errorMessage(err) }, 'shard election tick failed');
      }
      await sleep(this.o.retryPeriodMs, undefined, { signal }).catch(() => {});
    }
  }

  /**
   * Observe the Leases, say this replica is alive, clear out dead members, then
   * move toward the fair share. The signal ends the tick's requests.
   */
  private async tick(signal: AbortSignal): Promise<void> {
    const [leases, unsharded] = await Promise.all([this.list(signal), this.readUnsharded(signal)]);
    if (signal.aborted) return;
    const at = now();
    this.observe(leases, at);
    this.unsharded = unsharded && sight(unsharded, at, this.unsharded);
    await this.renewMembership(signal);
    await this.collectDeadMembers(at, signal);
    this.reportStranded(at);
    // The first tick only announces this replica: peers started with it get a tick to show up.
    if (this.ticks++ === 0 || signal.aborted) return;
    const moves = balance(this.view(at));
    const waiting = this.mustWait(at);
    if (waiting !== this.waitingFor && waiting !== '') {
      this.o.logger.warn({ shards: this.o.shards }, `${waiting}: acquiring no shard until they are gone`);
    }
    this.waitingFor = waiting;
    if (waiting !== '') {
      moves.acquire = [];
      moves.abandon = [...this.slots.values()].filter((s) => s.state === 'candidate').map((s) => s.shard);
    }
    this.act(moves);
  }

  /**
   * Replicas that split the Apps otherwise are alive: a holder of the
   * unsharded Lease, or members of another --shards. Empty when none is.
   */
  private mustWait(at: number): string {
    if (this.unsharded && isHeld(this.unsharded, at)) {
      return `${this.unsharded.record.holderIdentity} holds the unsharded Lease ${this.o.electionId} (--shards 1)`;
    }
    const others = this.otherShardCounts(at);
    return others.length > 0 ? `live replicas run --shards ${others.join(', ')}` : '';
  }

  private act(moves: ReturnType<typeof balance>): void {
    for (const shard of moves.abandon) void this.abandon(shard);
    for (const shard of moves.acquire) this.tryFor(shard);
    for (const shard of moves.handBack) void this.handBack(shard);
  }

  private view(at: number): ShardView {
    const slots = [...this.slots.values()];
    const free: number[] = [];
    for (let shard = 0; shard < this.o.shards; shard++) {
      const seen = this.seen.get(shardLeaseName(this.o.electionId, shard));
      const state = this.slots.get(shard)?.state;
      if (state === 'handingBack' || state === 'releasing') continue;
      // Held by this replica: its own slot (leading, candidate), or a release that failed: its to take again.
      if (!seen || leaseHold(seen, this.o.identity, at).state !== 'other') free.push(shard);
    }
    return {
      shards: this.o.shards,
      members: this.liveMembers(at),
      identity: this.o.identity,
      held: slots.filter((s) => s.state === 'leading').map((s) => s.shard),
      candidates: slots.filter((s) => s.state === 'candidate').map((s) => s.shard),
      free,
    };
  }

  /**
   * The shards held by no live member for a lease duration at least: a
   * replica that died leaves its member Lease expiring a moment before its
   * shard Leases, which are then taken as usual, and that is no news.
   */
  private strandedFor(at: number): StrandedShard[] {
    const holders = new Map<number, string>();
    for (let shard = 0; shard < this.o.shards; shard++) {
      const seen = this.seen.get(shardLeaseName(this.o.electionId, shard));
      if (seen && isHeld(seen, at)) holders.set(shard, seen.record.holderIdentity);
    }
    const held = strandedShards(this.o.electionId, holders, this.liveIdentities(at));
    const since = new Map(held.map((s) => [strandedKey(s), this.strandedSince.get(strandedKey(s)) ?? at]));
    this.strandedSince = since;
    return held.filter((s) => at - (since.get(strandedKey(s)) ?? at) >= this.o.leaseDurationMs);
  }

  /**
   * Says when a shard is stranded (strandedFor), and when that ends: its
   * Apps wait, unreconciled, until its Lease expires or someone deletes it.
   * A warning once per shard and holder, not on every tick.
   */
  private reportStranded(at: number): void {
    const stranded = this.strandedFor(at);
    const key = strandedKey;
    const before = new Set(this.strandedNow.map(key));
    const after = new Set(stranded.map(key));
    const fresh = stranded.filter((s) => !before.has(key(s)));
    for (const s of fresh) {
      const spec = this.seen.get(s.lease)?.lease.spec;
      this.o.logger.warn(
        {
          shard: s.shard,
          lease: `${this.o.namespace}/${s.lease}`,
          holder: s.holder,
          leaseDurationSeconds: spec?.leaseDurationSeconds,
        },
        'a shard is held by no live member of the election: its Apps are not reconciled until its Lease expires or is deleted',
      );
    }
    for (const s of this.strandedNow.filter((s) => !after.has(key(s)))) {
      this.o.logger.info({ shard: s.shard, holder: s.holder }, 'a shard is no longer held by a stranger');
    }
    const changed = fresh.length > 0 || before.size !== after.size;
    this.strandedNow = stranded;
    if (!changed) return;
    const withUid = fresh.map((s) => {
      const uid = this.seen.get(s.lease)?.lease.metadata?.uid;
      return uid ? { ...s, uid } : s;
    });
    this.o.onStranded?.(stranded, withUid);
  }

  /** The identities of the live members, of any --shards, this replica's own included. */
  private liveIdentities(at: number): Set<string> {
    const live = new Set([this.o.identity]);
    for (const seen of this.seen.values()) {
      const member = seen.lease.metadata?.labels?.[LABEL_LEASE_ROLE] === 'member';
      if (member && isHeld(seen, at)) live.add(seen.record.holderIdentity);
    }
    return live;
  }

  /**
   * Member Leases of the same --shards renewed within their duration, this
   * replica's counted whether or not its write landed yet.
   */
  private liveMembers(at: number): number {
    return 1 + this.otherMembers(at).filter((shards) => shards === String(this.o.shards)).length;
  }

  /** The --shards of live members that disagree with this replica's. */
  private otherShardCounts(at: number): string[] {
    return [...new Set(this.otherMembers(at).filter((shards) => shards !== String(this.o.shards)))];
  }

  /** The --shards of each other live member. */
  private otherMembers(at: number): string[] {
    const counts: string[] = [];
    for (const [name, seen] of this.seen) {
      const labels = seen.lease.metadata?.labels;
      if (labels?.[LABEL_LEASE_ROLE] !== 'member' || name === this.memberName) continue;
      if (isHeld(seen, at)) counts.push(labels[LABEL_SHARDS] ?? '');
    }
    return counts;
  }

  private observe(leases: readonly k8s.V1Lease[], at: number): void {
    const names = new Set<string>();
    for (const lease of leases) {
      const name = lease.metadata?.name ?? '';
      names.add(name);
      this.seen.set(name, sight(lease, at, this.seen.get(name)));
    }
    for (const name of this.seen.keys()) if (!names.has(name)) this.seen.delete(name);
  }

  // ---- the shards ----

  private tryFor(shard: number): void {
    const name = shardLeaseName(this.o.electionId, shard);
    const seen = this.seen.get(name);
    const slot = { shard, state: 'candidate' } as Slot;
    slot.elector = new LeaderElector({
      kubeConfig: this.o.kubeConfig,
      namespace: this.o.namespace,
      name,
      identity: this.o.identity,
      leaseDurationMs: this.o.leaseDurationMs,
      renewDeadlineMs: this.o.renewDeadlineMs,
      retryPeriodMs: this.o.retryPeriodMs,
      logger: this.o.logger,
      labels: { [LABEL_ELECTION]: this.o.electionId, [LABEL_LEASE_ROLE]: 'shard' },
      ...(seen ? { seen: { lease: seen.lease, at: seen.at } } : {}),
      onStartedLeading: () => this.acquired(slot),
      onStoppedLeading: () => this.lost(slot),
      onLeadershipChange: (leading) => this.o.onShardLeadership?.(name, leading),
    });
    this.slots.set(shard, slot);
    void slot.elector.start();
  }

  private acquired(slot: Slot): void {
    if (this.stopping || this.slots.get(slot.shard) !== slot || slot.state !== 'candidate') return;
    slot.state = 'leading';
    this.o.logger.info({ shard: slot.shard, owned: this.owned() }, 'acquired a shard: reconciling its Apps');
    this.o.onOwnedChange?.(this.owned().length);
    this.o.onAcquired(slot.shard);
  }

  /**
   * A shard's leadership ended. Handed back (releasing), abandoned as a
   * candidate, or stopping: as asked. Otherwise (stolen, or not renewed in
   * time) writes for it may still be in flight: the manager fences and exits.
   */
  private lost(slot: Slot): void {
    if (this.stopping || slot.state === 'releasing' || slot.state === 'candidate') return;
    this.o.logger.error({ shard: slot.shard }, 'lost a shard');
    this.o.onStoppedLeading();
  }

  private async abandon(shard: number): Promise<void> {
    const slot = this.slots.get(shard);
    if (slot?.state !== 'candidate') return;
    this.slots.delete(shard);
    // Released if an acquire cut short by this stop still made this replica the holder.
    await slot.elector.stop({ release: true });
  }

  /** No new writes for the shard, its work drained, then the Lease handed over. */
  private async handBack(shard: number): Promise<void> {
    const slot = this.slots.get(shard);
    if (slot?.state !== 'leading') return;
    slot.state = 'handingBack';
    this.o.onOwnedChange?.(this.owned().length);
    this.o.logger.info({ shard }, 'handing back a shard above the fair share: draining it');
    try {
      await this.o.drain(shard);
    } catch (err) {
      this.o.logger.warn({ shard, err: errorMessage(err) }, 'draining a shard failed');
    }
    // stop() releases it with the others.
    if (this.stopping || slot.state !== 'handingBack') return;
    slot.state = 'releasing';
    await slot.elector.stop({ release: true });
    if (this.slots.get(shard) === slot) this.slots.delete(shard);
    this.o.logger.info({ shard }, 'handed back a shard');
  }

  // ---- the members ----

  // Every request is held to the KubeConfig's bounds (the request timeout, the fence: kube/client.ts),
  // and those of a tick end with it as well.

  private async list(signal: AbortSignal): Promise<k8s.V1Lease[]> {
    const { namespace, electionId } = this.o;
    const labelSelector = `${LABEL_ELECTION}=${electionId}`;
    const list = await this.api.listNamespacedLease({ namespace, labelSelector }, alsoAbortedBy(signal));
    return list.items;
  }

  private async readUnsharded(signal: AbortSignal): Promise<k8s.V1Lease | undefined> {
    const { namespace, electionId: name } = this.o;
    return ignoreNotFound(this.api.readNamespacedLease({ name, namespace }, alsoAbortedBy(signal)));
  }

  /**
   * Creates or renews this replica's member Lease, conditional on the version
   * last listed; a conflict waits for the next tick.
   */
  private async renewMembership(signal: AbortSignal): Promise<void> {
    const { namespace, electionId, identity, leaseDurationMs, shards } = this.o;
    const time = new k8s.V1MicroTime();
    const spec: k8s.V1LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: leaseDurationMs / 1000,
      renewTime: time,
    };
    const current = this.seen.get(this.memberName)?.lease;
    try {
      if (current) {
        const body = { ...current, spec: { ...current.spec, ...spec } };
        await this.api.replaceNamespacedLease({ name: this.memberName, namespace, body }, alsoAbortedBy(signal));
      } else {
        const labels = { [LABEL_ELECTION]: electionId, [LABEL_LEASE_ROLE]: 'member', [LABEL_SHARDS]: String(shards) };
        const body = { metadata: { name: this.memberName, namespace, labels }, spec: { ...spec, acquireTime: time } };
        await this.api.createNamespacedLease({ namespace, body }, alsoAbortedBy(signal));
      }
    } catch (err) {
      if (!signal.aborted && !isConflict(err)) {
        this.o.logger.warn({ err: errorMessage(err) }, 'could not renew the member Lease');
      }
    }
  }

  /** Member Leases of replicas gone for two lease durations: deleted, so restarts do not pile them up. */
  private async collectDeadMembers(at: number, signal: AbortSignal): Promise<void> {
    const grace = this.o.leaseDurationMs;
    for (const [name, seen] of this.seen) {
      const member = seen.lease.metadata?.labels?.[LABEL_LEASE_ROLE] === 'member';
      if (!member || name === this.memberName || expiresAt(seen) + grace > at || signal.aborted) continue;
      const resourceVersion = seen.lease.metadata?.resourceVersion;
      try {
        const preconditions = resourceVersion ? { resourceVersion } : {};
        const request = { name, namespace: this.o.namespace, body: { preconditions } };
        await this.api.deleteNamespacedLease(request, alsoAbortedBy(signal));
        this.o.logger.info({ member: name }, 'deleted the member Lease of a replica gone');
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) {
          this.o.logger.warn({ member: name, err: errorMessage(err) }, 'could not delete a dead member Lease');
        }
      }
      this.seen.delete(name);
    }
  }

  /** On a graceful stop (so not aborted by it): the others need not wait for this replica's member Lease to expire. */
  private async leave(): Promise<void> {
    const request = { name: this.memberName, namespace: this.o.namespace };
    try {
      await withDeadline(this.o.renewDeadlineMs, undefined, (signal) =>
        this.api.deleteNamespacedLease(request, alsoAbortedBy(signal)),
      );
    } catch (err) {
      if (!isNotFound(err)) this.o.logger.warn({ err: errorMessage(err) }, 'could not delete the member Lease');
    }
  }
}
