// GET .../apps/NAME/actions, the pure parts (issue #25 item 6): each action of
// an App explained by the rules (the 409's own text, from conflictOf) and by
// RBAC (ApiGuard.permissions: one review per verb, a failed one "unknown"),
// with its declared arguments and the kubectl and curl that take it, built
// from the same declaration as the CLI's flags and the API's body.
import { describe, expect, it } from 'vitest';
import { ApiGuard, type Permission } from '../../src/api/access.ts';
import { actionList, conflictOf, parseActionBody } from '../../src/api/actions.ts';
import type { AccessRequest, ApiAuth, UserInfo } from '../../src/api/auth.ts';
import { ApiError } from '../../src/api/errors.ts';
import { curlCommand, kubectlCommand } from '../../src/app/action-commands.ts';
import type { CachedApp } from '../../src/app/cached.ts';
import { ACTION_ARGS, ACTIONS, type Action, type ActionArgs, argsOf } from '../../src/app/intents.ts';
import type { RevisionStatus } from '../../src/app/schema.ts';
import { parse } from '../../src/cli/args.ts';
import { revisionStatus } from '../fixtures/app-status.ts';

const T0 = '2026-11-21T10:00:00.000Z';
const revision = (n: number): RevisionStatus => revisionStatus(n);

/** Healthy on revision 1: nothing in preview, so promote is refused, pause allowed. */
const SETTLED: CachedApp = {
  metadata: { name: 'web', namespace: 'shop', uid: 'uid-1', resourceVersion: '7', generation: 1 },
  spec: {},
  status: {
    phase: 'Healthy',
    observedGeneration: 1,
    active: revision(1),
    stable: revision(1),
    history: [{ revision: 1, image: revision(1).image, createdAt: T0, promotedVia: 'first-release' }],
  },
};

const every = (permission: Permission) =>
  Object.fromEntries(ACTIONS.map((action) => [action, permission])) as Record<Action, Permission>;

describe('actionList', () => {
  it('gives each action the rules’ verdict with the 409’s own text, and RBAC’s, allowed only when both allow', () => {
    const list = actionList(SETTLED, every({ allowed: true }), []);
    expect(list.namespace).toBe('shop');
    expect(list.name).toBe('web');
    expect(list.actions.map((a) => a.action)).toEqual([...ACTIONS]);
    for (const entry of list.actions) {
      const conflict = conflictOf(SETTLED, entry.action, {}, []);
      expect(entry.rules).toEqual(conflict === undefined ? { allowed: true } : { allowed: false, reason: conflict });
      expect(entry.allowed).toBe(conflict === undefined);
    }
    const promote = list.actions.find((a) => a.action === 'promote');
    expect(promote).toMatchObject({
      allowed: false,
      rules: { allowed: false, reason: 'App shop/web: nothing is in preview to promote' },
      rbac: { allowed: true },
    });
    expect(list.actions.find((a) => a.action === 'pause')).toMatchObject({ allowed: true, rules: { allowed: true } });
  });

  it('passes RBAC’s answer through, a refusal or an unknown one disabling an action the rules allow', () => {
    const permissions: Record<Action, Permission> = {
      ...every({ allowed: false, reason: 'forbidden' }),
      resume: { allowed: 'unknown', reason: 'the access review failed: timeout' },
    };
    const list = actionList(SETTLED, permissions, []);
    expect(list.actions.find((a) => a.action === 'pause')).toMatchObject({
      allowed: false,
      rules: { allowed: true },
      rbac: { allowed: false, reason: 'forbidden' },
    });
    expect(list.actions.find((a) => a.action === 'resume')).toMatchObject({
      allowed: false,
      rules: { allowed: true },
      rbac: { allowed: 'unknown', reason: 'the access review failed: timeout' },
    });
  });

  it('lists each action’s declared arguments with their CLI flags, and its kubectl and curl with default arguments', () => {
    const list = actionList(SETTLED, every({ allowed: true }), []);
    for (const entry of list.actions) {
      expect(entry.args.map(({ name, kind, help }) => [name, { kind, help }])).toEqual(argsOf(entry.action));
      expect(entry.kubectl).toBe(kubectlCommand(entry.action, 'shop', 'web'));
      expect(entry.curl).toBe(curlCommand(entry.action, 'shop', 'web'));
    }
    expect(list.actions.find((a) => a.action === 'promote')?.args).toEqual([
      { name: 'full', kind: 'switch', help: ACTION_ARGS.promote.full.help, flag: '--full' },
      { name: 'revision', kind: 'revision', help: ACTION_ARGS.promote.revision.help, flag: '--revision' },
      { name: 'skipChecks', kind: 'switch', help: ACTION_ARGS.promote.skipChecks.help, flag: '--skip-checks' },
    ]);
  });
});

describe('kubectlCommand and curlCommand', () => {
  it('write an action with its default arguments as docs/api.md and docs/cli.md do', () => {
    expect(kubectlCommand('promote', 'shop', 'web')).toBe('kubectl teal promote web -n shop');
    expect(curlCommand('abort', 'shop', 'web')).toBe(
      'curl -sS -X POST -H "Authorization: Bearer $TOKEN" "$TEAL/api/v1/namespaces/shop/apps/web/abort"',
    );
  });

  const withArgs: [Action, ActionArgs][] = [
    ['promote', { revision: 5, skipChecks: true }],
    ['promote', { full: true, skipChecks: false }],
    ['undo', { toRevision: 3, preview: true }],
  ];

  it.each(withArgs)(
    '%s %o: the CLI parses the command, and the API the body, back to the same arguments',
    (action, args) => {
      const given = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== false));
      const words = kubectlCommand(action, 'shop', 'web', args).split(' ');
      expect(words.slice(0, 2)).toEqual(['kubectl', 'teal']);
      const parsed = parse(words.slice(2));
      if (parsed.kind !== 'run') throw new Error('not a command');
      expect(parsed.command.name).toBe(action);
      expect(parsed.args).toEqual(['web']);
      expect(parsed.flags.namespace).toBe('shop');
      for (const [name, { kind }] of argsOf(action)) {
        expect(parsed.flags[name]).toEqual(kind === 'switch' ? args[name] === true : args[name]);
      }

      const curl = curlCommand(action, 'shop', 'web', args);
      const body = curl.match(/-d '([^']*)'/)?.[1];
      expect(parseActionBody(action, JSON.parse(body ?? 'null'))).toEqual(given);
      expect(curl).toContain(`"$TEAL/api/v1/namespaces/shop/apps/web/${action}"`);
    },
  );

  it('refuses a namespace or name that is no DNS-1123 label, rather than write it into a shell command', () => {
    expect(() => kubectlCommand('pause', 'shop', 'web; rm -rf /')).toThrow(/App name/);
    expect(() => curlCommand('pause', '$(id)', 'web')).toThrow(/namespace/);
  });
});

describe('ApiGuard.permissions', () => {
  const ann: UserInfo = { username: 'ann', groups: [] };

  it('reviews each action’s verb on the App: allowed, refused with the 403’s text, or unknown when its review fails', async () => {
    const asked: AccessRequest[] = [];
    const auth: Pick<ApiAuth, 'authorize'> = {
      authorize: async (_user, request) => {
        asked.push(request);
        if (request.verb === 'promote') return;
        if (request.verb === 'undo') throw new ApiError(503, 'the access review failed: connection refused');
        throw new ApiError(403, `cannot ${request.verb}`);
      },
    };
    const permissions = await new ApiGuard(auth).permissions(ann, { ns: 'shop', name: 'web' });
    expect(asked.map((r) => r.verb).sort()).toEqual([...ACTIONS].sort());
    for (const request of asked) expect(request).toMatchObject({ namespace: 'shop', name: 'web' });
    expect(permissions.promote).toEqual({ allowed: true });
    expect(permissions.abort).toEqual({ allowed: false, reason: 'cannot abort' });
    expect(permissions.undo).toEqual({ allowed: 'unknown', reason: 'the access review failed: connection refused' });
  });
});
