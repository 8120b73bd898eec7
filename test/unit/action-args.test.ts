// The arguments of the actions are declared once (ACTION_ARGS, src/app/intents.ts).
// Each declared argument must be accepted by the HTTP API's body, offered by
// the CLI as a flag with its help, carried by the intent annotation to the
// operator and back, and heard by the rules; and an argument one action does
// not declare must be refused by all of them alike. The docs show the same.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseActionBody } from '../../src/api/actions.ts';
import {
  ACTION_ARGS,
  ACTIONS,
  type Action,
  type ActionArgs,
  type ArgDeclaration,
  type ArgName,
  allArgs,
  argsOf,
  encodeIntent,
  flagOf,
  givenArgs,
  intentAnnotation,
  readIntents,
} from '../../src/app/intents.ts';
import { COMMANDS, commandHelp, parse } from '../../src/cli/args.ts';
import { UsageError } from '../../src/cli/errors.ts';
import { type ActionView, actionVerdict } from '../../src/rollout/action-rules.ts';

const ROOT = resolve(import.meta.dirname, '../..');

/** A value of each kind, and how the CLI writes it after its flag. */
const SAMPLE = { revision: 3, switch: true } as const;
const argv = (name: ArgName, arg: ArgDeclaration): string[] =>
  arg.kind === 'revision' ? [`--${flagOf(name)}`, String(SAMPLE.revision)] : [`--${flagOf(name)}`];

const rows = ACTIONS.flatMap((action) =>
  argsOf(action).map(([name, arg]) => ({ action, name, arg, args: { [name]: SAMPLE[arg.kind] } as ActionArgs })),
);

const fields = { id: 'i-1', by: 'alice', via: 'cli', at: '2026-11-26T20:00:00Z' } as const;

/** The intent written for the arguments, as the operator reads it back. */
function roundTrip(action: Action, args: ActionArgs): ActionArgs | string {
  const encoded = encodeIntent(action, { ...fields, ...args });
  if (!encoded.ok) return encoded.problem;
  const { intents, problems } = readIntents({ [intentAnnotation(action)]: encoded.value });
  if (problems.length > 0) return problems.map((p) => p.message).join('; ');
  const { id, by, via, at, action: read, ...rest } = intents[0] ?? { ...fields, action };
  expect({ id, by, via, at, action: read }).toEqual({ ...fields, action });
  return rest;
}

function cliArgs(argvs: string[]): ActionArgs {
  const parsed = parse(argvs);
  if (parsed.kind !== 'run') throw new Error('not a command');
  return parsed.flags;
}

describe('each declared argument of an action', () => {
  it.each(rows)(
    '$action $name: the API body, the CLI flag and the intent carry it alike',
    ({ action, name, arg, args }) => {
      expect(parseActionBody(action, args)).toEqual(args);
      expect(givenArgs(action, cliArgs([action, 'web', ...argv(name, arg)]))).toEqual(args);
      expect(roundTrip(action, args)).toEqual(args);
    },
  );

  it.each(rows)(
    '$action $name: the CLI shows it, with its help, in the usage line and the flags',
    ({ action, name, arg }) => {
      const spec = COMMANDS.find((c) => c.name === action);
      if (!spec) throw new Error(`no command ${action}`);
      expect(spec.flags[flagOf(name)]).toMatchObject({
        type: arg.kind === 'revision' ? 'string' : 'boolean',
        help: arg.help,
      });
      const help = commandHelp(spec);
      expect(help).toContain(`[${argv(name, arg).join(' ').replace(String(SAMPLE.revision), 'N')}]`);
      expect(help).toContain(arg.help);
    },
  );

  it.each(rows)(
    '$action $name: a wrong value is refused by the API, the CLI and the intent',
    ({ action, name, arg }) => {
      const bad = { [name]: arg.kind === 'revision' ? 0 : 'yes' };
      expect(() => parseActionBody(action, bad)).toThrow(expect.objectContaining({ status: 422 }));
      expect(roundTrip(action, bad as ActionArgs)).toMatch(new RegExp(`${name}: `));
      if (arg.kind === 'revision') {
        expect(() => parse([action, 'web', `--${flagOf(name)}`, '0'])).toThrow(UsageError);
      }
    },
  );
});

describe('an argument an action does not declare', () => {
  const foreign = ACTIONS.flatMap((action) =>
    allArgs()
      .filter(([name]) => !(name in ACTION_ARGS[action]))
      .map(([name, arg]) => ({ action, name, arg, args: { [name]: SAMPLE[arg.kind] } as ActionArgs })),
  );

  it.each(foreign)(
    '$action does not take $name: the API, the CLI and the intent refuse it',
    ({ action, name, arg, args }) => {
      expect(() => parseActionBody(action, args)).toThrow(`unknown field "${name}" in the ${action} body`);
      expect(() => parse([action, 'web', ...argv(name, arg)])).toThrow(UsageError);
      expect(roundTrip(action, args)).toContain(`${action} takes no "${name}"`);
    },
  );
});

describe('the rules and the declaration', () => {
  it('an argument means one thing: its name has one kind in every action that takes it', () => {
    const kinds = new Map<string, Set<string>>();
    for (const action of ACTIONS) {
      for (const [name, arg] of argsOf(action)) kinds.set(name, (kinds.get(name) ?? new Set()).add(arg.kind));
    }
    for (const [name, set] of kinds) expect([...set], name).toHaveLength(1);
  });

  it('the rules hear the arguments the CLI parsed: promote --revision N is refused when N is not in preview', () => {
    const view: ActionView = {
      deleting: false,
      specPaused: false,
      pausedByHand: false,
      active: { revision: 1, hash: 'h1' },
      inFlight: { revision: 2, hash: 'h2' },
      aborted: undefined,
      history: [1],
      replicaSets: [
        { revision: 1, hash: 'h1' },
        { revision: 2, hash: 'h2' },
      ],
      checks: undefined,
      restarting: undefined,
    };
    const flags = cliArgs(['promote', 'web', '--revision', '3']);
    expect(actionVerdict('promote', flags, view)).toMatchObject({ allowed: false, code: 'not-in-preview' });
    expect(actionVerdict('promote', parseActionBody('promote', { revision: 3 }), view)).toMatchObject({
      allowed: false,
      code: 'not-in-preview',
    });
    const undo = cliArgs(['undo', 'web', '--to-revision', '1', '--preview']);
    expect(actionVerdict('undo', undo, view)).toMatchObject({ allowed: true, revision: 1 });
  });
});

describe('the docs show the declaration', () => {
  const bodyOf = (action: Action) =>
    `{${argsOf(action)
      .map(([name, arg]) => `"${name}"?: ${arg.kind === 'revision' ? 'int ≥ 1' : 'bool'}`)
      .join(', ')}}`;

  it.each(ACTIONS)('docs/api.md gives the body of %s', (action) => {
    const row = readFileSync(resolve(ROOT, 'docs/api.md'), 'utf8')
      .split('\n')
      .find(
        (line) =>
          /^\| [a-z /]+ \|/.test(line) && (line.split('|')[1] ?? '').split('/').some((a) => a.trim() === action),
      );
    expect(row?.split('|')[2]?.trim()).toBe(`\`${bodyOf(action)}\``);
  });

  it.each(ACTIONS)('docs/cli.md gives the usage of %s as the CLI does', (action) => {
    const spec = COMMANDS.find((c) => c.name === action);
    const docs = readFileSync(resolve(ROOT, 'docs/cli.md'), 'utf8');
    expect(docs).toContain(`kubectl teal ${action} ${spec?.usage}\n`);
  });
});
