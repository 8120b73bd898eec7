// The command line: one spec per command (its flags, arguments and help),
// parsed with util.parseArgs. Flags may come before or after the command, as
// kubectl allows; kubectl itself passes everything after "teal" unchanged.
import type { ParseArgsOptionsConfig } from 'node:util';
import { type Action, type ActionArgs, allArgs, argsOf, flagOf } from '../app/action-args.ts';
import { positiveInteger } from '../app/cluster-values.ts';
import { LINT_EXIT, UsageError } from './errors.ts';
import { type Flags, FORMATS, type Format } from './flags.ts';

// Not `import { parseArgs } from 'node:util'`: importing a built-in as a module
// reads every export of it, and node:util's load worker_threads and the diff
// code (eleven of Node's modules, compiled at every start of every command).
const { parseArgs } = process.getBuiltinModule('node:util');

export interface Flag {
  type: 'string' | 'boolean';
  short?: string;
  /** Placeholder of a string flag's value in the help. */
  value?: string;
  /** The only values the flag takes (completion offers them). */
  choices?: readonly string[];
  /** The value is a file's path (completion offers the shell's files). */
  file?: boolean;
  help: string;
}

/** A command's code, imported only when it runs (in the bundle, a chunk of its own). */
export type Run = (args: string[], flags: Flags) => Promise<number> | number;

export interface CommandSpec {
  name: string;
  /** What follows the command name in the usage line. */
  usage: string;
  summary: string;
  /** Names of the positional arguments, all required. */
  args: readonly string[];
  flags: Record<string, Flag>;
  examples: readonly string[];
  /** The only values a positional argument takes, by its name (completion offers them). */
  choices: Readonly<Record<string, readonly string[]>>;
  /** The exit code of an error, usage included, when not EXIT.error: lint's 1 says "findings". */
  errorExit?: number;
  load: () => Promise<Run>;
}

/** The shells `kubectl teal completion` writes a script for. */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;

export const GLOBAL: Record<string, Flag> = {
  namespace: { type: 'string', short: 'n', value: 'NS', help: 'namespace of the App (default: the context namespace)' },
  context: { type: 'string', value: 'NAME', help: 'kubeconfig context to use' },
  kubeconfig: {
    type: 'string',
    value: 'PATH',
    file: true,
    help: 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)',
  },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
};

const OUTPUT: Record<string, Flag> = {
  output: { type: 'string', short: 'o', value: 'FORMAT', choices: FORMATS, help: 'print json or yaml instead of text' },
};

const command = (
  name: string,
  usage: string,
  summary: string,
  args: readonly string[],
  flags: Record<string, Flag>,
  examples: readonly string[],
  load: () => Promise<Run>,
  choices: Readonly<Record<string, readonly string[]>> = {},
  errorExit?: number,
): CommandSpec => ({
  ...(errorExit === undefined ? {} : { errorExit }),
  name,
  usage,
  summary,
  args,
  // A command's own flag of a global name (dashboard's -n) keeps the global's place and takes its help.
  flags: Object.fromEntries([
    ...Object.entries(flags).filter(([flag]) => !(flag in GLOBAL)),
    ...Object.entries(GLOBAL).map(([flag, global]) => [flag, flags[flag] ?? global] as const),
  ]),
  examples,
  choices,
  load,
});

/**
 * An action's command: its usage line and flags derived from the arguments
 * the action takes, so the CLI offers exactly what the API and the intent accept.
 */
function actionCommand(action: Action, summary: string, examples: readonly string[]): CommandSpec {
  const args = argsOf(action);
  const usage = args.map(([name, arg]) => `[--${flagOf(name)}${arg.kind === 'revision' ? ' N' : ''}]`);
  const flags = Object.fromEntries(
    args.map(([name, arg]): [string, Flag] => [
      flagOf(name),
      arg.kind === 'revision' ? { type: 'string', value: 'N', help: arg.help } : { type: 'boolean', help: arg.help },
    ]),
  );
  return command(action, ['APP', ...usage].join(' '), summary, ['APP'], flags, examples, async () =>
    (await import('./commands/actions.ts')).actionCommand(action),
  );
}

export const COMMANDS: readonly CommandSpec[] = [
  command(
    'list',
    '[-A]',
    'List Apps: NAME PHASE ACTIVE PREVIEW COMMIT AGE',
    [],
    {
      'all-namespaces': { type: 'boolean', short: 'A', help: 'list the Apps of every namespace' },
      ...OUTPUT,
    },
    ['kubectl teal list -n demo', 'kubectl teal list -A -o yaml'],
    async () => (await import('./commands/list.ts')).list,
  ),
  command(
    'get',
    'APP [--watch]',
    'Show an App as a tree: revisions, ReplicaSets, pods and the build Job',
    ['APP'],
    {
      watch: { type: 'boolean', short: 'w', help: 'redraw whenever the App, its ReplicaSets, pods or Jobs change' },
      ...OUTPUT,
    },
    ['kubectl teal get weather', 'kubectl teal get weather -w', 'kubectl teal get weather -o json'],
    async () => (await import('./commands/get.ts')).get,
  ),
  command(
    'previews',
    'APP [--watch]',
    "List the previews of an App's pull requests (spec.previews): state, child App and its phase, head, URL",
    ['APP'],
    {
      watch: { type: 'boolean', short: 'w', help: 'redraw whenever the App or one of its preview Apps changes' },
      ...OUTPUT,
    },
    ['kubectl teal previews weather', 'kubectl teal previews weather -w', 'kubectl teal previews weather -o json'],
    async () => (await import('./commands/previews.ts')).previews,
  ),
  actionCommand('promote', 'Promote the revision in preview to active', [
    'kubectl teal promote weather',
    'kubectl teal promote weather --revision 7',
    'kubectl teal promote weather --skip-checks',
  ]),
  actionCommand('abort', 'Abort the release in progress: active stays on, or returns to, the stable revision', [
    'kubectl teal abort weather',
  ]),
  actionCommand('retry', 'Clear an abort, so the desired revision is tried again', ['kubectl teal retry weather']),
  actionCommand('undo', 'Return to the previous stable revision, or to revision N', [
    'kubectl teal undo weather',
    'kubectl teal undo weather --to-revision 3 --preview',
  ]),
  actionCommand('pause', 'Pause the App: nothing new is deployed or promoted', ['kubectl teal pause weather']),
  actionCommand('resume', 'Resume a paused App', ['kubectl teal resume weather']),
  actionCommand('restart', 'Replace the pods of the active revision, a few at a time, without a new revision', [
    'kubectl teal restart weather',
    'kubectl teal restart weather && kubectl teal status weather',
  ]),
  command(
    'status',
    'APP [--timeout 5m]',
    'Wait until the App is Healthy, Paused or Degraded; the exit code says which',
    ['APP'],
    {
      timeout: {
        type: 'string',
        value: 'DURATION',
        help: 'give up after this long, e.g. 90s, 5m (default 5m; 0: no limit)',
      },
      ...OUTPUT,
    },
    ['kubectl teal status weather', 'kubectl teal status weather --timeout 10m || echo "not healthy"'],
    async () => (await import('./commands/status.ts')).status,
  ),
  command(
    'logs',
    'APP [-f] [--commit SHA | --check NAME]',
    "Print the logs of the App's current build, of the build of a commit, or of a job check's latest measurement",
    ['APP'],
    {
      follow: { type: 'boolean', short: 'f', help: 'stream the logs until the build (or the check) ends' },
      commit: {
        type: 'string',
        value: 'SHA',
        help: 'the build of this commit (a SHA, or a prefix of 4 or more hex digits)',
      },
      check: {
        type: 'string',
        value: 'NAME',
        help: 'the Job of the latest measurement of this job check, in the latest run that has it',
      },
    },
    [
      'kubectl teal logs weather -f',
      'kubectl teal logs weather --commit 1a2b3c4',
      'kubectl teal logs weather --check smoke',
    ],
    async () => (await import('./commands/logs.ts')).logs,
  ),
  command(
    'lint',
    'APP [--drain DURATION]',
    "Check the App's traffic set-up: readiness probe, pods' shutdown against the load balancer's drain, pod-aware load balancers without ping-pong slots",
    ['APP'],
    {
      drain: {
        type: 'string',
        value: 'DURATION',
        help: "hold the pods' shutdown against this drain, e.g. 30s, instead of the load balancers' (docs/cli.md#lint)",
      },
      ...OUTPUT,
    },
    ['kubectl teal lint weather', 'kubectl teal lint weather --drain 45s', 'kubectl teal lint weather -o json'],
    async () => (await import('./commands/lint.ts')).lint,
    {},
    LINT_EXIT.error,
  ),
  command(
    'set',
    'image APP IMAGE',
    'Set the image of an App that deploys a ready image (spec.image)',
    ['image', 'APP', 'IMAGE'],
    {},
    ['kubectl teal set image weather registry.example.com/team/weather:1.4.2'],
    async () => (await import('./commands/set-image.ts')).setImage,
    { image: ['image'] },
  ),
  command(
    'dashboard',
    '[--no-browser] [--port N] [--address URL]',
    "Open the web dashboard, logged in with the kubeconfig's token, through a port-forward to the operator",
    [],
    {
      namespace: {
        type: 'string',
        short: 'n',
        value: 'NS',
        help: "the operator's namespace (default: teal-system)",
      },
      service: {
        type: 'string',
        value: 'NAME',
        help: "the operator's Service (default: teal, the chart's, else teal-operator, config/'s)",
      },
      address: {
        type: 'string',
        value: 'URL',
        help: "an operator on this machine instead, such as make dev's: http://127.0.0.1:8081",
      },
      port: { type: 'string', value: 'N', help: 'listen on 127.0.0.1:N (default: a free port)' },
      'no-browser': { type: 'boolean', help: 'print the login URL instead of opening a browser' },
    },
    [
      'kubectl teal dashboard',
      'kubectl teal dashboard -n platform --service teal-operator --port 8080',
      'kubectl teal dashboard --address http://127.0.0.1:8081 --no-browser',
    ],
    async () => (await import('./commands/dashboard.ts')).dashboard,
  ),
  command(
    'completion',
    SHELLS.join('|'),
    'Print the script that completes kubectl-teal in bash, zsh or fish',
    ['SHELL'],
    {},
    [
      'source <(kubectl teal completion bash)',
      'kubectl teal completion fish > ~/.config/fish/completions/kubectl-teal.fish',
    ],
    async () => (await import('./commands/completion.ts')).completion,
    { SHELL: SHELLS },
  ),
  command(
    'version',
    '',
    'Print the version of kubectl-teal',
    [],
    {},
    ['kubectl teal version'],
    async () => (await import('./commands/version.ts')).version,
  ),
];

export type Parsed =
  | { kind: 'help'; command: CommandSpec | undefined }
  | { kind: 'run'; command: CommandSpec; args: string[]; flags: Flags };

export const findCommand = (name: string) => COMMANDS.find((c) => c.name === name);

/** How a flag is written: --name, and -x if it has a short form. */
const flagWords = (name: string, flag: Flag): string[] => [`--${name}`, ...(flag.short ? [`-${flag.short}`] : [])];

/** The words of the flags that take a value (the next word is the value). */
const valueFlagWords = (flags: Record<string, Flag>): string[] =>
  Object.entries(flags)
    .filter(([, f]) => f.type === 'string')
    .flatMap(([name, f]) => flagWords(name, f));

/** Flags of any command that take a value, to skip it when looking for the command name. */
const VALUE_FLAGS = new Set(COMMANDS.flatMap((c) => valueFlagWords(c.flags)));

/** A revision flag's number, read as Teal reads revisions everywhere, so the API and the intent accept it too. */
function revisionNumber(value: string | undefined, flag: string, cmd: string): number | undefined {
  if (value === undefined) return undefined;
  const revision = positiveInteger.parse(value);
  if (revision === undefined) throw new UsageError(`--${flag} must be a revision number (1, 2, ...)`, cmd);
  return revision;
}

/** The actions' arguments from the flags given; a switch not given is off. */
function argValues(values: Values, cmd: string): ActionArgs {
  return Object.fromEntries(
    allArgs().map(([name, arg]) => {
      const flag = flagOf(name);
      const value = values[flag];
      if (arg.kind === 'switch') return [name, value === true];
      return [name, revisionNumber(typeof value === 'string' ? value : undefined, flag, cmd)];
    }),
  );
}

/** Where the command is: the first word that is not a flag or a flag's value; -1 when there is none. */
export function commandIndex(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (arg === '--') break;
    if (arg.startsWith('-')) {
      if (VALUE_FLAGS.has(arg)) i += 1;
      continue;
    }
    return i;
  }
  return -1;
}

/** No command, or `help [COMMAND]`. */
function helpRequest(name: string | undefined, rest: readonly string[]): Parsed {
  if (name === undefined) {
    if (rest.length === 0 || rest.some((a) => a === '-h' || a === '--help'))
      return { kind: 'help', command: undefined };
    throw new UsageError(`no command given (flags: ${rest.join(' ')})`);
  }
  const about = rest.find((a) => !a.startsWith('-'));
  if (about === undefined) return { kind: 'help', command: undefined };
  const spec = findCommand(about);
  if (!spec) throw new UsageError(`unknown command "${about}"`);
  return { kind: 'help', command: spec };
}

type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** The command's flags and positionals, as node:util's parseArgs reads them. */
function readFlags(spec: CommandSpec, rest: string[]): { values: Values; positionals: string[] } {
  const options: ParseArgsOptionsConfig = {};
  for (const [flag, f] of Object.entries(spec.flags)) {
    options[flag] = f.short ? { type: f.type, short: f.short } : { type: f.type };
  }
  try {
    return parseArgs({ args: rest, options, allowPositionals: true, strict: true });
  } catch (err) {
    // parseArgs explains unknown flags and missing values well; keep its words, drop its code.
    const message = err instanceof Error ? err.message.replace(/\. To specify a positional.*$/s, '') : String(err);
    throw new UsageError(message, spec.name);
  }
}

/** Refuses the wrong number of arguments, and `set` anything but `image`. */
function checkPositionals(spec: CommandSpec, positionals: readonly string[]): void {
  if (positionals.length !== spec.args.length) {
    const missing = spec.args.slice(positionals.length);
    throw new UsageError(
      missing.length > 0
        ? `${spec.name} needs ${missing.join(' and ')}`
        : `${spec.name} takes ${spec.args.length === 0 ? 'no arguments' : spec.args.join(' ')}; got ${positionals.join(' ')}`,
      spec.name,
    );
  }
  if (spec.name === 'set' && positionals[0] !== 'image') {
    throw new UsageError(`"set ${positionals[0] ?? ''}" is not a command: only "set image APP IMAGE"`, spec.name);
  }
  spec.args.forEach((arg, i) => {
    const allowed = spec.choices[arg];
    const value = positionals[i] ?? '';
    if (allowed && !allowed.includes(value)) {
      throw new UsageError(`${spec.name} takes ${arg} ${allowed.join(', ')}, not "${value}"`, spec.name);
    }
  });
}

/** The flags every command reads, typed and checked. */
function flagsOf(spec: CommandSpec, values: Values): Flags {
  const str = (key: string): string | undefined => {
    const v = values[key];
    return typeof v === 'string' ? v : undefined;
  };
  const bool = (key: string): boolean => values[key] === true;
  const output = str('output');
  if (output !== undefined && !(FORMATS as readonly string[]).includes(output)) {
    throw new UsageError(`-o must be json or yaml, not "${output}"`, spec.name);
  }
  return {
    namespace: str('namespace'),
    allNamespaces: bool('all-namespaces'),
    context: str('context'),
    kubeconfig: str('kubeconfig'),
    output: output as Format | undefined,
    help: false,
    watch: bool('watch'),
    ...argValues(values, spec.name),
    timeout: str('timeout'),
    follow: bool('follow'),
    commit: str('commit'),
    check: str('check'),
    port: str('port'),
    address: str('address'),
    service: str('service'),
    noBrowser: bool('no-browser'),
    drain: str('drain'),
  };
}

export function parse(argv: readonly string[]): Parsed {
  const index = commandIndex(argv);
  const rest = [...argv];
  const name = index >= 0 ? (rest.splice(index, 1)[0] ?? '') : undefined;
  if (name === undefined || name === 'help') return helpRequest(name, rest);
  const spec = findCommand(name);
  if (!spec) throw new UsageError(`unknown command "${name}"`);
  const { values, positionals } = readFlags(spec, rest);
  if (values.help === true) return { kind: 'help', command: spec };
  checkPositionals(spec, positionals);
  const flags = flagsOf(spec, values);
  return { kind: 'run', command: spec, args: spec.name === 'set' ? positionals.slice(1) : positionals, flags };
}

function flagLines(flags: Record<string, Flag>): string[] {
  const rows = Object.entries(flags).map(([name, f]) => {
    const short = f.short ? `-${f.short}, ` : '    ';
    return [`  ${short}--${name}${f.value ? ` ${f.value}` : ''}`, f.help] as const;
  });
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, help]) => `${left.padEnd(width)}   ${help}`);
}

export function commandHelp(spec: CommandSpec): string {
  return [
    `${spec.summary}.`,
    '',
    'Usage:',
    `  kubectl teal ${spec.name}${spec.usage ? ` ${spec.usage}` : ''} [flags]`,
    '',
    'Flags:',
    ...flagLines(spec.flags),
    '',
    'Examples:',
    ...spec.examples.map((e) => `  ${e}`),
    '',
  ].join('\n');
}

export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => `${c.name} ${c.usage}`.length));
  return [
    'kubectl teal: blue/green releases of Teal Apps (apps.teal.dev).',
    '',
    'Usage:',
    '  kubectl teal COMMAND [flags]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${`${c.name} ${c.usage}`.trimEnd().padEnd(width)}   ${c.summary}`),
    '',
    'Flags of every command:',
    ...flagLines(GLOBAL),
    '',
    'Run "kubectl teal COMMAND --help" for the flags of one command; docs/cli.md has the exit codes.',
    '',
  ].join('\n');
}
