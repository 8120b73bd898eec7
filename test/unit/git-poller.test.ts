import { describe, expect, it } from 'vitest';
import { GitError } from '../../src/git/errors.ts';
import {
  type PollerTimers,
  type RefsRequest,
  type ResolveOutcome,
  SourcePoller,
  type SourcePollerOptions,
} from '../../src/git/poller.ts';
import type { ResolvedRef } from '../../src/git/resolve.ts';

const MIN = 60_000;

/** Timers driven by advance(): fires due callbacks in time order and lets promises settle between them. */
function fakeTimers() {
  let now = 0;
  let seq = 0;
  const pending = new Map<number, { at: number; fn: () => void }>();
  const settle = async () => {
    for (let i = 0; i < 20; i++) await Promise.resolve();
  };
  const timers: PollerTimers = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const id = ++seq;
      pending.set(id, { at: now + ms, fn });
      return id;
    },
    clearTimeout: (handle) => {
      pending.delete(handle as number);
    },
  };
  return {
    timers,
    pending: () => [...pending.values()].map((t) => t.at - now).sort((a, b) => a - b),
    async advance(ms: number) {
      const until = now + ms;
      await settle();
      for (;;) {
        const next = [...pending.entries()].sort((a, b) => a[1].at - b[1].at)[0];
        if (!next || next[1].at > until) break;
        pending.delete(next[0]);
        now = next[1].at;
        next[1].fn();
        await settle();
      }
      now = until;
      await settle();
    },
  };
}

const sha = (n: number) => n.toString(16).padStart(40, '0');

/** A resolver over an in-memory repository table, recording each call. */
function fakeResolver() {
  const repos = new Map<string, Map<string, string>>();
  const calls: RefsRequest[] = [];
  let failWith: Error | undefined;
  let hold: PromiseWithResolvers<void> | undefined;
  return {
    calls,
    set(url: string, ref: string, commit: string) {
      const refs = repos.get(url) ?? new Map<string, string>();
      refs.set(ref, commit);
      repos.set(url, refs);
    },
    fail(err: Error | undefined) {
      failWith = err;
    },
    holdNext() {
      hold = Promise.withResolvers<void>();
      return hold;
    },
    resolve: async (request: RefsRequest): Promise<Map<string, ResolvedRef | GitError>> => {
      calls.push(request);
      const gate = hold;
      hold = undefined;
      if (gate) await gate.promise;
      if (failWith) throw failWith;
      const refs = repos.get(request.url) ?? new Map<string, string>();
      return new Map(
        request.refs.map((ref) => {
          const commit = refs.get(ref);
          return [
            ref,
            commit
              ? { ref: `refs/heads/${ref}`, commit }
              : new GitError('RefNotFound', `ref "${ref}" not found in ${request.url}`, { ref }),
          ];
        }),
      );
    },
  };
}

function setup(overrides: Partial<SourcePollerOptions> = {}) {
  const clock = fakeTimers();
  const git = fakeResolver();
  const reports: { apps: string[]; outcome: ResolveOutcome }[] = [];
  const poller = new SourcePoller({
    resolve: git.resolve,
    timers: clock.timers,
    random: () => 0.5, // no jitter
    onResolved: (apps, outcome) => reports.push({ apps, outcome }),
    ...overrides,
  });
  const commitsOf = (app: string) =>
    reports
      .filter((r) => r.apps.includes(app))
      .map((r) => (r.outcome instanceof GitError ? r.outcome.reason : r.outcome.commit));
  return { clock, git, reports, poller, commitsOf };
}

const REPO = 'https://github.com/Org/Repo.git';

describe('SourcePoller', () => {
  it('lists a repository once per interval however many Apps share it, with all their refs', async () => {
    const { clock, git, poller, reports } = setup();
    git.set(REPO, 'main', sha(1));
    git.set(REPO, 'dev', sha(2));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    poller.watch('ns/b', { url: 'git@github.com:Org/Repo.git', ref: 'main', interval: MIN });
    poller.watch('ns/c', { url: 'https://GitHub.com/Org/Repo', ref: 'dev', interval: MIN });
    await clock.advance(0);
    // ns/b uses ssh: another protocol, so another call; a and c share one.
    const httpsCalls = () => git.calls.filter((c) => c.url.startsWith('https'));
    expect(httpsCalls()).toHaveLength(1);
    expect(httpsCalls()[0]?.refs).toEqual(['dev', 'main']);
    expect(reports).toContainEqual({ apps: ['ns/a'], outcome: { ref: 'refs/heads/main', commit: sha(1) } });
    expect(reports).toContainEqual({ apps: ['ns/c'], outcome: { ref: 'refs/heads/dev', commit: sha(2) } });

    for (let i = 1; i <= 5; i++) {
      await clock.advance(MIN);
      expect(httpsCalls()).toHaveLength(1 + i);
    }
  });

  it('shares one call between Apps on one repository, forms and all, with equal credentials', async () => {
    const { clock, git, poller, reports } = setup();
    git.set(REPO, 'main', sha(1));
    for (let i = 0; i < 50; i++) {
      const url = i % 2 ? REPO : 'https://github.com/Org/Repo/';
      poller.watch(`ns/app-${i}`, { url, ref: 'main', interval: MIN, credentialsKey: 'ns/git' });
    }
    await clock.advance(0);
    expect(git.calls).toHaveLength(1);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.apps).toHaveLength(50);
    await clock.advance(10 * MIN);
    expect(git.calls).toHaveLength(11);
    expect(poller.stats()).toMatchObject({ lsRemotes: 11, errors: 0, repos: 1, apps: 50 });
  });

  it('keeps different credentials apart', async () => {
    const { clock, git, poller } = setup({ credentials: async (key) => ({ bearerToken: `token-of-${key}` }) });
    git.set(REPO, 'main', sha(1));
    poller.watch('a/x', { url: REPO, ref: 'main', interval: MIN, credentialsKey: 'a/git' });
    poller.watch('b/x', { url: REPO, ref: 'main', interval: MIN, credentialsKey: 'b/git' });
    await clock.advance(0);
    expect(git.calls.map((c) => c.credentials?.bearerToken).sort()).toEqual(['token-of-a/git', 'token-of-b/git']);
  });

  it('reports only changes: a new commit, an error, a recovery', async () => {
    const { clock, git, poller, commitsOf } = setup();
    git.set(REPO, 'main', sha(1));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(0);
    await clock.advance(3 * MIN);
    expect(commitsOf('ns/a')).toEqual([sha(1)]);
    git.set(REPO, 'main', sha(2));
    await clock.advance(MIN);
    expect(commitsOf('ns/a')).toEqual([sha(1), sha(2)]);
    git.fail(new GitError('Unreachable', 'down'));
    await clock.advance(MIN);
    git.fail(undefined);
    await clock.advance(10 * MIN);
    expect(commitsOf('ns/a')).toEqual([sha(1), sha(2), 'Unreachable', sha(2)]);
  });

  it('with interval 0 resolves once when watched, never polls, and answers triggers', async () => {
    const { clock, git, poller, commitsOf } = setup();
    git.set(REPO, 'main', sha(1));
    poller.watch('ns/hook', { url: REPO, ref: 'main', interval: 0 });
    await clock.advance(0);
    expect(git.calls).toHaveLength(1);
    await clock.advance(60 * MIN);
    expect(git.calls).toHaveLength(1);
    expect(clock.pending()).toEqual([]);

    git.set(REPO, 'main', sha(2));
    const { appKeys, done } = poller.trigger(['git@github.com:Org/Repo.git']);
    // ssh form of the URL: the https App still matches, since webhooks name repos in any form.
    expect(appKeys).toEqual(['ns/hook']);
    await done;
    expect(git.calls).toHaveLength(2);
    expect(commitsOf('ns/hook')).toEqual([sha(1), sha(2)]);
    expect(poller.trigger(['ns/hook']).appKeys).toEqual(['ns/hook']);
    expect(poller.trigger(['https://github.com/Other/Repo']).appKeys).toEqual([]);
  });

  it('coalesces a trigger that arrives while a call is in flight into one more call', async () => {
    const { clock, git, poller } = setup();
    git.set(REPO, 'main', sha(1));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: 0 });
    const gate = git.holdNext();
    await clock.advance(0);
    expect(git.calls).toHaveLength(1);
    const first = poller.trigger([REPO]);
    const second = poller.trigger([REPO]);
    gate.resolve();
    await Promise.all([first.done, second.done]);
    expect(git.calls).toHaveLength(2);
  });

  it('backs off on errors, doubling up to 5 minutes, and recovers to the interval', async () => {
    const { clock, git, poller } = setup();
    git.set(REPO, 'main', sha(1));
    git.fail(new GitError('Unreachable', 'connection refused'));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: 30_000 });
    await clock.advance(0);
    const times: number[] = [];
    let last = git.calls.length;
    for (let t = 0; t < 30 * MIN; t += 1000) {
      await clock.advance(1000);
      if (git.calls.length !== last) {
        last = git.calls.length;
        times.push(clock.timers.now());
      }
    }
    const gaps = times.map((t, i) => t - (times[i - 1] ?? 0));
    expect(gaps.slice(0, 5)).toEqual([60_000, 120_000, 240_000, 300_000, 300_000]);
    expect(poller.stats().errors).toBe(git.calls.length);

    git.fail(undefined);
    await clock.advance(5 * MIN);
    const recovered = git.calls.length;
    await clock.advance(30_000);
    expect(git.calls.length).toBe(recovered + 1);
  });

  it('retries webhook-only repositories that failed, with backoff', async () => {
    const { clock, git, poller } = setup({ errorRetryMs: 10_000 });
    git.fail(new Error('spawn git ENOENT'));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: 0 });
    await clock.advance(0);
    expect(clock.pending()).toEqual([20_000]);
    git.fail(undefined);
    git.set(REPO, 'main', sha(1));
    await clock.advance(20_000);
    expect(git.calls).toHaveLength(2);
    expect(clock.pending()).toEqual([]);
  });

  it('reports a credentials failure as an error and backs off', async () => {
    const { clock, git, poller, reports } = setup({
      credentials: async () => {
        throw new GitError('InvalidSource', 'Secret ns/git not found');
      },
    });
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN, credentialsKey: 'ns/git' });
    await clock.advance(0);
    expect(git.calls).toHaveLength(0);
    const outcome = reports[0]?.outcome;
    expect(outcome).toBeInstanceOf(GitError);
    expect(outcome instanceof GitError && outcome.reason).toBe('InvalidSource');
    expect(poller.stats()).toMatchObject({ lsRemotes: 0, errors: 1 });
  });

  it('applies jitter to each delay', async () => {
    const { clock, git, poller } = setup({ random: () => 0.99, jitter: 0.1 });
    git.set(REPO, 'main', sha(1));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(0);
    expect(clock.pending()).toEqual([Math.round(MIN * (1 + 0.1 * (2 * 0.99 - 1)))]);
  });

  it('hands a new App the known result of its repository without another call', async () => {
    const { clock, git, poller, commitsOf } = setup();
    git.set(REPO, 'main', sha(1));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(0);
    poller.watch('ns/b', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(0);
    expect(git.calls).toHaveLength(1);
    expect(commitsOf('ns/b')).toEqual([sha(1)]);
    // A new ref on the same repository needs a call, which covers both refs.
    poller.watch('ns/c', { url: REPO, ref: 'dev', interval: MIN });
    await clock.advance(0);
    expect(git.calls).toHaveLength(2);
    expect(git.calls[1]?.refs).toEqual(['dev', 'main']);
    expect(commitsOf('ns/c')).toEqual(['RefNotFound']);
  });

  it('is idempotent for an unchanged spec and re-reports after a change', async () => {
    const { clock, git, poller, commitsOf } = setup();
    git.set(REPO, 'main', sha(1));
    git.set(REPO, 'dev', sha(2));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(0);
    for (let i = 0; i < 10; i++) poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(0);
    expect(git.calls).toHaveLength(1);
    poller.watch('ns/a', { url: REPO, ref: 'dev', interval: MIN });
    await clock.advance(0);
    expect(commitsOf('ns/a')).toEqual([sha(1), sha(2)]);
    expect(poller.last('ns/a')).toEqual({ ref: 'refs/heads/dev', commit: sha(2) });
  });

  it('uses the shortest interval of the Apps on a repository', async () => {
    const { clock, git, poller } = setup();
    git.set(REPO, 'main', sha(1));
    poller.watch('ns/slow', { url: REPO, ref: 'main', interval: 10 * MIN });
    await clock.advance(0);
    poller.watch('ns/fast', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(MIN);
    expect(git.calls).toHaveLength(2);
    poller.unwatch('ns/fast');
    // The poll already due still runs; after it, the remaining App's interval applies.
    await clock.advance(MIN);
    expect(git.calls).toHaveLength(3);
    await clock.advance(9 * MIN);
    expect(git.calls).toHaveLength(3);
    await clock.advance(MIN);
    expect(git.calls).toHaveLength(4);
  });

  it('does not poll Apps pinned to a commit SHA', async () => {
    const { clock, git, poller, reports } = setup({
      resolve: async ({ refs }) => {
        git.calls.push({ url: REPO, refs, credentials: undefined });
        return new Map(refs.map((ref) => [ref, { ref, commit: ref }]));
      },
    });
    poller.watch('ns/pinned', { url: REPO, ref: sha(7), interval: MIN });
    await clock.advance(10 * MIN);
    expect(git.calls).toHaveLength(1);
    expect(reports).toEqual([{ apps: ['ns/pinned'], outcome: { ref: sha(7), commit: sha(7) } }]);
  });

  it('stops polling a repository once its last App is unwatched', async () => {
    const { clock, git, poller, reports } = setup();
    git.set(REPO, 'main', sha(1));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    poller.watch('ns/b', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(0);
    poller.unwatch('ns/a');
    await clock.advance(MIN);
    expect(git.calls).toHaveLength(2);
    poller.unwatch('ns/b');
    await clock.advance(10 * MIN);
    expect(git.calls).toHaveLength(2);
    expect(clock.pending()).toEqual([]);
    expect(poller.stats()).toMatchObject({ repos: 0, apps: 0 });
    expect(poller.trigger([REPO]).appKeys).toEqual([]);
    expect(reports.flatMap((r) => r.apps)).toEqual(['ns/a', 'ns/b']);
  });

  it('drops the result of a call in flight for an App unwatched meanwhile', async () => {
    const { clock, git, poller, reports } = setup();
    git.set(REPO, 'main', sha(1));
    const gate = git.holdNext();
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(0);
    poller.unwatch('ns/a');
    gate.resolve();
    await clock.advance(0);
    expect(reports).toEqual([]);
    expect(clock.pending()).toEqual([]);
  });

  it('limits ls-remotes in flight', async () => {
    const gates: (() => void)[] = [];
    let active = 0;
    let maxActive = 0;
    const { clock, poller } = setup({
      maxConcurrent: 2,
      resolve: async ({ refs }) => {
        active++;
        maxActive = Math.max(maxActive, active);
        await new Promise<void>((resolve) => gates.push(resolve));
        active--;
        return new Map(refs.map((ref) => [ref, { ref: `refs/heads/${ref}`, commit: sha(1) }]));
      },
    });
    for (let i = 0; i < 5; i++) poller.watch(`ns/a${i}`, { url: `https://h/r${i}`, ref: 'main', interval: MIN });
    await clock.advance(0);
    expect(gates).toHaveLength(2);
    while (gates.length > 0) {
      for (const release of gates.splice(0)) release();
      await clock.advance(0);
    }
    expect(maxActive).toBe(2);
    expect(poller.stats().lsRemotes).toBe(5);
  });

  it('survives a throwing callback', async () => {
    const errors: unknown[] = [];
    const { clock, git, poller } = setup({
      onResolved: () => {
        throw new Error('callback broke');
      },
      onCallbackError: (err) => errors.push(err),
    });
    git.set(REPO, 'main', sha(1));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(MIN);
    expect(git.calls).toHaveLength(2);
    expect(errors).toHaveLength(1);
  });

  it('stop() cancels every timer', async () => {
    const { clock, git, poller } = setup();
    git.set(REPO, 'main', sha(1));
    poller.watch('ns/a', { url: REPO, ref: 'main', interval: MIN });
    await clock.advance(0);
    poller.stop();
    await clock.advance(10 * MIN);
    expect(git.calls).toHaveLength(1);
    expect(clock.pending()).toEqual([]);
    await poller.trigger([REPO]).done;
    expect(git.calls).toHaveLength(1);
  });
});
