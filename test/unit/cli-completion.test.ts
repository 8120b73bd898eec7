// What completes `kubectl teal <words>` (src/cli/completion.ts): the words
// typed after "teal", the last one the word being typed, in; candidates out,
// from the declarations the CLI parses with (COMMANDS in args.ts), and App
// names left to the cluster with the namespace, context and kubeconfig typed.
import { describe, expect, it } from 'vitest';
import { COMMANDS, GLOBAL, parse } from '../../src/cli/args.ts';
import { DIRECTIVE, formatCompletion } from '../../src/cli/complete-protocol.ts';
import { type Completion, completeWords } from '../../src/cli/completion.ts';
import { UsageError } from '../../src/cli/errors.ts';

/** The values offered, or "apps" with the prefix and where to list them. */
function offered(...words: string[]): Completion {
  return completeWords(words);
}

const valuesOf = (c: Completion): string[] => (c.kind === 'candidates' ? c.candidates.map((x) => x.value) : []);

describe('completion of kubectl teal', () => {
  it('offers every command, described by its summary, before one is typed', () => {
    const all = offered('');
    expect(valuesOf(all)).toEqual(COMMANDS.map((c) => c.name));
    expect(all).toMatchObject({ directive: DIRECTIVE.noFileComp });
    expect(all.kind === 'candidates' && all.candidates[0]?.description).toBe(COMMANDS[0]?.summary);
    expect(valuesOf(offered('pro'))).toEqual(['promote']);
    expect(valuesOf(offered('-n', 'demo', 'st'))).toEqual(['status']);
    expect(valuesOf(offered('help', 'ver'))).toEqual(['version']);
  });

  it("offers the command's flags, long and short, as the parser reads them", () => {
    expect(valuesOf(offered('promote', 'web', '--'))).toEqual(
      Object.keys(COMMANDS.find((c) => c.name === 'promote')?.flags ?? {}).map((f) => `--${f}`),
    );
    expect(valuesOf(offered('promote', '--skip'))).toEqual(['--skip-checks']);
    expect(valuesOf(offered('undo', 'web', '--to'))).toEqual(['--to-revision']);
    expect(valuesOf(offered('list', '-A', '-o', 'json', '--all'))).toEqual(['--all-namespaces']);
    expect(valuesOf(offered('logs', '-'))).toContain('-f');
    expect(valuesOf(offered('dashboard', '--'))).toEqual([
      '--service',
      '--address',
      '--port',
      '--no-browser',
      '--namespace',
      '--context',
      '--kubeconfig',
      '--help',
    ]);
    expect(offered('dashboard', '')).toMatchObject({ kind: 'candidates', candidates: [] });
    // Before a command: the flags of every command.
    expect(valuesOf(offered('--'))).toEqual(Object.keys(GLOBAL).map((f) => `--${f}`));
  });

  it("offers a flag's values: its choices, files for --kubeconfig, nothing for the rest", () => {
    expect(valuesOf(offered('get', 'web', '-o', ''))).toEqual(['json', 'yaml']);
    expect(valuesOf(offered('list', '--output', 'y'))).toEqual(['yaml']);
    expect(valuesOf(offered('get', '--output=j'))).toEqual(['--output=json']);
    expect(offered('get', '--kubeconfig', '')).toEqual({ kind: 'candidates', candidates: [], directive: 0 });
    expect(offered('-n', '')).toEqual({ kind: 'candidates', candidates: [], directive: DIRECTIVE.noFileComp });
    expect(offered('logs', 'web', '--commit', '')).toMatchObject({ candidates: [] });
  });

  it('asks for the App names where -n, --context and --kubeconfig say, wherever they are typed', () => {
    expect(offered('get', '')).toEqual({
      kind: 'apps',
      prefix: '',
      connect: { namespace: undefined, context: undefined, kubeconfig: undefined },
    });
    expect(offered('-n', 'demo', 'promote', 'we')).toMatchObject({
      kind: 'apps',
      prefix: 'we',
      connect: { namespace: 'demo' },
    });
    expect(offered('status', '--namespace=demo', '--context', 'kind', '--kubeconfig', '/k', 'w')).toMatchObject({
      kind: 'apps',
      connect: { namespace: 'demo', context: 'kind', kubeconfig: '/k' },
    });
    // A flag's value is not the App: -o's json here.
    expect(offered('get', '-o', 'json', '')).toMatchObject({ kind: 'apps' });
    expect(offered('set', 'image', '')).toMatchObject({ kind: 'apps' });
  });

  it("offers a positional argument's choices, and nothing after the last argument", () => {
    expect(valuesOf(offered('set', ''))).toEqual(['image']);
    expect(valuesOf(offered('completion', ''))).toEqual(['bash', 'zsh', 'fish']);
    expect(offered('get', 'web', '')).toEqual({ kind: 'candidates', candidates: [], directive: DIRECTIVE.noFileComp });
    expect(offered('set', 'image', 'web', '')).toMatchObject({ candidates: [] });
    expect(offered('version', '')).toMatchObject({ candidates: [] });
    expect(offered('nope', '')).toMatchObject({ candidates: [] });
  });

  it('writes candidates as kubectl reads them: value, tab, one-line description; then the directive', () => {
    expect(formatCompletion([{ value: 'get', description: 'Show\tan\nApp' }, { value: 'web' }], 4)).toBe(
      'get\tShow an App\nweb\n:4\n',
    );
    expect(formatCompletion([], 0)).toBe(':0\n');
  });

  it('takes only a shell it writes a script for', () => {
    expect(parse(['completion', 'zsh'])).toMatchObject({ kind: 'run', args: ['zsh'] });
    expect(() => parse(['completion', 'tcsh'])).toThrow(UsageError);
    expect(() => parse(['completion', 'tcsh'])).toThrow('completion takes SHELL bash, zsh, fish, not "tcsh"');
  });
});
