// The e2e harness keeps an operator running as its Deployment would: one that
// exits because it lost its lease (on a loaded machine, an API server that
// answered no renewal within the renew deadline) is started again and takes
// part in the election anew, so the tests after it still have an operator.
import { CoordinationV1Api, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { clients, createNamespace, waitFor } from '../support/kube.ts';
import { type Operator, type OperatorOptions, startOperator } from '../support/operator.ts';

const coordination = clients().kc.makeApiClient(CoordinationV1Api);
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => {});
});

const LEASE = 'teal-controller';
/** Short timings, so that a stolen lease is noticed at the next renewal. */
const TIMINGS: OperatorOptions['lease'] = { duration: '3s', renew: '2s', retry: '500ms' };

async function operatorIn(namespace: string, options: Partial<OperatorOptions> = {}): Promise<Operator> {
  const op = await startOperator({ namespace, lease: TIMINGS, ...options });
  cleanups.push(() => op.kill());
  return op;
}

async function leads(op: Operator): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${op.healthPort}/readyz`);
  return ((await res.json()) as { leader?: boolean }).leader === true;
}

/** Another holder takes the lease for a minute, as a replica whose renewals we never saw would. */
async function steal(namespace: string): Promise<void> {
  await waitFor('the lease taken by a ghost', async () => {
    const lease = await coordination.readNamespacedLease({ namespace, name: LEASE });
    const now = new V1MicroTime();
    const stolen: V1Lease = {
      ...lease,
      spec: { ...lease.spec, holderIdentity: 'ghost', leaseDurationSeconds: 60, acquireTime: now, renewTime: now },
    };
    // A conflict with the operator's own renewal is tried again on the newer lease.
    return coordination.replaceNamespacedLease({ namespace, name: LEASE, body: stolen }).then(
      () => true,
      () => undefined,
    );
  });
}

describe('the e2e harness', () => {
  it('starts an operator that lost its lease again, which leads once the lease is free', async () => {
    const { name: ns, remove } = await createNamespace('harness-restart');
    cleanups.push(remove);
    const op = await operatorIn(ns);
    await waitFor('the operator to lead', async () => ((await leads(op)) ? true : undefined));
    const first = op.process;

    await steal(ns);
    await waitFor('the operator to be started again', async () => (op.restarts() === 1 ? true : undefined));
    expect(first.exitCode).toBe(1);
    expect(op.logs()).toContain('lost the lease: aborted the API requests in flight, exiting without draining');
    expect(op.process).not.toBe(first);

    // The new start waits on the ghost's lease; freed, it is taken.
    await coordination.deleteNamespacedLease({ namespace: ns, name: LEASE });
    await waitFor('the new start to lead', async () => ((await leads(op)) ? true : undefined));
    expect(op.process.exitCode).toBeNull();
    expect(op.restarts()).toBe(1);
  });

  it('leaves an exit on a lost lease an exit when the test asks so', async () => {
    const { name: ns, remove } = await createNamespace('harness-exit');
    cleanups.push(remove);
    const op = await operatorIn(ns, { restartOnLeaseLoss: false });
    await waitFor('the operator to lead', async () => ((await leads(op)) ? true : undefined));
    const first = op.process;
    // The harness would decide on a restart once the pipes closed; this listener runs after its.
    const closed = new Promise((resolve) => first.once('close', resolve));

    await steal(ns);
    await closed;
    expect(first.exitCode).toBe(1);
    expect(op.logs()).toContain('lost the lease: aborted the API requests in flight, exiting without draining');
    expect(op.process).toBe(first);
    expect(op.restarts()).toBe(0);
  });
});
