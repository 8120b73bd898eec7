// Shell completion, as cobra's hidden __complete command answers it: kubectl
// (1.26+) runs kubectl_complete-teal with the words typed after "teal", the
// last one the word being completed (empty after a space), and reads the
// candidates, one a line ("value<TAB>description"), then ":<directive>".
// The scripts of `kubectl teal completion SHELL` ask the same question.
// Commands, flags and their values come from the declarations the CLI parses
// with (COMMANDS in args.ts); only App names need the cluster, which
// completeWords leaves to its caller (commands/complete.ts).
import { type CommandSpec, commandIndex, type Flag, findCommand, GLOBAL, COMMANDS as SPECS } from './args.ts';
import { type Candidate, DIRECTIVE } from './complete-protocol.ts';
import type { ConnectOptions } from './kube.ts';

export type Completion =
  | { kind: 'candidates'; candidates: Candidate[]; directive: number }
  /** The names of the Apps in the namespace the words give (or the kubeconfig's) that start with prefix. */
  | { kind: 'apps'; prefix: string; connect: ConnectOptions };

const candidates = (list: Candidate[], directive: number = DIRECTIVE.noFileComp): Completion => ({
  kind: 'candidates',
  candidates: list,
  directive,
});

/** The candidates that start with what is typed. */
export const matching = (list: readonly Candidate[], prefix: string): Candidate[] =>
  list.filter((c) => c.value.startsWith(prefix));

const values = (list: readonly string[], prefix: string): Completion =>
  candidates(
    matching(
      list.map((value) => ({ value })),
      prefix,
    ),
  );

/** The command names, described by their summaries. */
const commandNames = (prefix: string): Completion =>
  candidates(
    matching(
      SPECS.map((c) => ({ value: c.name, description: c.summary })),
      prefix,
    ),
  );

/** The flag of a word (--name, -x), if the command has it. */
function flagOf(word: string, flags: Record<string, Flag>): [string, Flag] | undefined {
  const entries = Object.entries(flags);
  if (word.startsWith('--')) return entries.find(([name]) => name === word.slice(2));
  return entries.find(([, f]) => f.short !== undefined && word === `-${f.short}`);
}

/** What the words before the one being completed say: positionals, flag values, a flag awaiting its value. */
interface Scan {
  positionals: string[];
  given: Record<string, string>;
  /** The flag whose value is being completed. */
  pending: [string, Flag] | undefined;
}

function scan(words: readonly string[], skip: number, flags: Record<string, Flag>): Scan {
  const result: Scan = { positionals: [], given: {}, pending: undefined };
  let afterDashes = false;
  words.forEach((word, i) => {
    if (i === skip) return;
    if (result.pending) {
      result.given[result.pending[0]] = word;
      result.pending = undefined;
    } else if (afterDashes || !word.startsWith('-') || word === '-') {
      result.positionals.push(word);
    } else if (word === '--') {
      afterDashes = true;
    } else if (word.startsWith('--') && word.includes('=')) {
      const at = word.indexOf('=');
      result.given[word.slice(2, at)] = word.slice(at + 1);
    } else {
      const flag = flagOf(word, flags);
      if (flag?.[1].type === 'string') result.pending = flag;
    }
  });
  return result;
}

/** A flag's value: its choices, the shell's files, or nothing to offer. */
function flagValue(flag: Flag, prefix: string, typed = prefix): Completion {
  if (flag.choices) {
    const head = typed.slice(0, typed.length - prefix.length);
    return candidates(
      matching(
        flag.choices.map((value) => ({ value: `${head}${value}` })),
        typed,
      ),
    );
  }
  return candidates([], flag.file ? DIRECTIVE.default : DIRECTIVE.noFileComp);
}

/** The flags of a command (or, before one, of every command), long and short. */
function flagNames(flags: Record<string, Flag>, prefix: string): Completion {
  const list = Object.entries(flags).flatMap(([name, f]) => [
    { value: `--${name}`, description: f.help },
    ...(f.short ? [{ value: `-${f.short}`, description: f.help }] : []),
  ]);
  return candidates(matching(list, prefix));
}

/** The next positional argument of a command: its choices, an App's name, or nothing to offer. */
function positional(spec: CommandSpec, given: Scan, prefix: string): Completion {
  const arg = spec.args[given.positionals.length];
  if (arg === undefined) return candidates([]);
  const choices = spec.choices[arg];
  if (choices) return values(choices, prefix);
  if (arg !== 'APP') return candidates([]);
  const { namespace, context, kubeconfig } = given.given;
  return { kind: 'apps', prefix, connect: { namespace, context, kubeconfig } };
}

/** What completes the last of the words typed after "teal". */
export function completeWords(words: readonly string[]): Completion {
  const typed = words.at(-1) ?? '';
  const before = words.slice(0, -1);
  const index = commandIndex(before);
  const name = index >= 0 ? before[index] : undefined;
  const spec = name === undefined ? undefined : findCommand(name);
  if (name !== undefined && name !== 'help' && !spec) return candidates([]);
  const flags = spec?.flags ?? GLOBAL;
  const given = scan(before, index, flags);
  if (given.pending) return flagValue(given.pending[1], typed);
  if (typed.startsWith('--') && typed.includes('=')) {
    const flag = flagOf(typed.slice(0, typed.indexOf('=')), flags);
    return flag ? flagValue(flag[1], typed.slice(typed.indexOf('=') + 1), typed) : candidates([]);
  }
  if (typed.startsWith('-')) return flagNames(flags, typed);
  if (name === undefined) return commandNames(typed);
  if (!spec) return given.positionals.length === 0 ? commandNames(typed) : candidates([]);
  return positional(spec, given, typed);
}
