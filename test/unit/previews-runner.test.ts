// The previews runner (controller/previews-runner.ts, issue #28 items 2, 6):
// lists a parent App's pull requests in the background when the reconcile says
// it is due and queues the App; writes the plan's commit statuses and comments
// once each and keeps what the provider accepted until status records it; says
// a missing token Secret by name, never a token; forgets an App whole.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { PreviewsStatus } from '../../src/app/previews-schema.ts';
import { PreviewsRunner, withAccepted } from '../../src/controller/previews-runner.ts';
import type { PreviewProviderAction } from '../../src/previews/plan.ts';
import type { HostSpec, PreviewHost } from '../../src/previews/providers/index.ts';
import { commit, parentApp, pullRequest } from '../fixtures/previews.ts';

const KEY = 'team/weather';
const TOKEN = 'the-secret-token-value';

/** A host that answers from memory and counts each call. */
function fakeHost() {
  const calls: string[] = [];
  const host: PreviewHost = {
    provider: 'gitea',
    listOpen: async () => {
      calls.push('listOpen');
      return { ok: true, value: [pullRequest(1)] };
    },
    permission: async () => ({ ok: true, value: 'write' }),
    labelAddedBy: async () => ({ ok: true, value: undefined }),
    setStatus: async (sha, status) => {
      calls.push(`setStatus ${sha} ${status.state}`);
      return { ok: true, value: undefined };
    },
    upsertComment: async (number) => {
      calls.push(`upsertComment ${number}`);
      return { ok: true, value: 'created' };
    },
    removeLabel: async (number, label) => {
      calls.push(`removeLabel ${number} ${label}`);
      return { ok: true, value: undefined };
    },
    notBefore: () => 0,
  };
  return { host, calls };
}

function setup(options: { token?: string | undefined; canWrite?: boolean } = {}) {
  const { host, calls } = fakeHost();
  const enqueued: string[] = [];
  const specs: HostSpec[] = [];
  const logged: string[] = [];
  const token = 'token' in options ? options.token : TOKEN;
  const runner = new PreviewsRunner({
    readSecretValue: async () => token,
    enqueue: (key) => enqueued.push(key),
    canWrite: () => options.canWrite ?? true,
    logger: pino({ level: 'debug' }, { write: (line: string) => logged.push(line) }),
    host: (spec) => {
      specs.push(spec);
      return { ok: true, value: host };
    },
  });
  const enqueuedOnce = () =>
    new Promise<void>((resolve) => {
      const wait = () => (enqueued.length > 0 ? resolve() : setTimeout(wait, 1));
      wait();
    });
  return { runner, calls, enqueued, specs, logged, enqueuedOnce };
}

const statusAction = (state: 'pending' | 'success'): PreviewProviderAction => ({
  kind: 'setCommitStatus',
  number: 1,
  sha: commit(1),
  context: 'teal/preview',
  status: { state, description: `the preview is ${state}` },
});
const commentAction: PreviewProviderAction = { kind: 'editComment', number: 1, body: 'hello', hash: 'h1' };

describe('PreviewsRunner', () => {
  it('lists at once the first time, keeps the listing and queues the App; the host gets the token, never a log', async () => {
    const { runner, calls, enqueued, specs, logged, enqueuedOnce } = setup();
    runner.due(parentApp(), undefined);
    await enqueuedOnce();
    expect(enqueued).toEqual([KEY]);
    expect(calls).toEqual(['listOpen']);
    const seen = runner.seen(KEY);
    expect(seen?.listing).toMatchObject({ ok: true, pullRequests: [{ number: 1 }] });
    expect(specs[0]).toMatchObject({ provider: 'github', token: TOKEN, appKey: KEY });
    expect(logged.join('')).not.toContain(TOKEN);
  });

  it('a missing token Secret is a listing that failed, naming the Secret and key, and nothing is asked', async () => {
    const { runner, calls, specs, enqueuedOnce } = setup({ token: undefined });
    runner.due(parentApp(), undefined);
    await enqueuedOnce();
    const listing = runner.seen(KEY)?.listing;
    expect(listing).toMatchObject({ ok: false, error: { reason: 'TokenUnavailable' } });
    expect(listing?.ok === false && listing.error.message).toMatch(/Secret team\/\S+ or its key token is missing/);
    expect(calls).toEqual([]);
    expect(specs).toEqual([]);
  });

  it('writes each asked write once, in order, and keeps what was accepted until status records it', async () => {
    const { runner, calls, enqueued, enqueuedOnce } = setup();
    runner.due(parentApp(), undefined);
    await enqueuedOnce();
    enqueued.length = 0;
    const unlabel: PreviewProviderAction = { kind: 'removeLabel', number: 1, label: 'ok', why: 'StaleApproval' };
    runner.send(KEY, [statusAction('pending'), commentAction, unlabel]);
    // Asked again before the first answers: not sent twice.
    runner.send(KEY, [statusAction('pending'), commentAction, unlabel]);
    await enqueuedOnce();
    expect(calls.slice(1)).toEqual([`setStatus ${commit(1)} pending`, 'upsertComment 1', 'removeLabel 1 ok']);
    const status: PreviewsStatus = {
      listedAt: '2026-11-27T06:00:00Z',
      pullRequests: [{ number: 1, head: commit(1), state: 'Building' }],
    };
    const merged = runner.merged(KEY, status);
    expect(merged?.pullRequests?.[0]?.reported).toMatchObject({
      status: { sha: commit(1), state: 'pending', description: 'the preview is pending' },
      comment: { hash: 'h1' },
    });
    // Once the status shows it (landed), memory lets it go: the same status comes back as it is.
    expect(runner.merged(KEY, merged)).toEqual(merged);
    expect(runner.merged(KEY, status)).toEqual(status);
  });

  it('takes a stale label off once per listing: asked again on the same listing, it is not sent (a label added back is a new approval)', async () => {
    const { runner, calls, enqueued, enqueuedOnce } = setup();
    runner.due(parentApp(), undefined);
    await enqueuedOnce();
    enqueued.length = 0;
    const unlabel: PreviewProviderAction = { kind: 'removeLabel', number: 1, label: 'ok', why: 'StaleApproval' };
    runner.send(KEY, [unlabel]);
    await enqueuedOnce();
    // Each reconcile plans on the same listing, which still shows the label: nothing more is sent.
    runner.send(KEY, [unlabel]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['listOpen', 'removeLabel 1 ok']);
    // A new listing that shows it again: taken off again.
    enqueued.length = 0;
    runner.due(parentApp(), 0);
    await enqueuedOnce();
    enqueued.length = 0;
    runner.send(KEY, [unlabel]);
    // An accepted write queues the App: wait for that, not for a while.
    await enqueuedOnce();
    expect(calls).toEqual(['listOpen', 'removeLabel 1 ok', 'listOpen', 'removeLabel 1 ok']);
  });

  it('writes nothing for an App this replica may not write for, and forgets an App whole', async () => {
    const { runner, calls, enqueuedOnce } = setup({ canWrite: false });
    runner.due(parentApp(), undefined);
    await enqueuedOnce();
    runner.send(KEY, [statusAction('success')]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['listOpen']);
    runner.forget(KEY);
    expect(runner.seen(KEY)).toBeUndefined();
  });
});

describe('withAccepted', () => {
  it('merges accepted reports into their pull requests and leaves the others', () => {
    const status: PreviewsStatus = {
      listedAt: '2026-11-27T06:00:00Z',
      pullRequests: [
        {
          number: 1,
          head: commit(1),
          state: 'Building',
          reported: { comment: { hash: 'old', at: '2026-11-27T05:00:00Z' } },
        },
        { number: 2, head: commit(2), state: 'Ready' },
      ],
    };
    const status1 = { sha: commit(1), state: 'pending' as const, description: 'd', at: '2026-11-27T06:00:01Z' };
    const merged = withAccepted(status, new Map([[1, { status: status1 }]]));
    expect(merged?.pullRequests?.[0]?.reported).toEqual({
      comment: { hash: 'old', at: '2026-11-27T05:00:00Z' },
      status: status1,
    });
    expect(merged?.pullRequests?.[1]).toEqual(status.pullRequests?.[1]);
    expect(withAccepted(undefined, new Map([[1, { status: status1 }]]))).toBeUndefined();
  });
});
