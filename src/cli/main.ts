// kubectl-teal: the kubectl plugin of Teal (`kubectl teal ...`). It works
// with the user's kubeconfig, so the API server enforces their RBAC, and it
// never touches workloads: actions are intents on the App (DESIGN §3.2, §3.5).
//
// Each command's module is imported only when it runs, so a command loads only
// what it uses: `version` nothing of client-node, `list` not the action rules.
// In the bundle (scripts/bundle-cli.ts) each import is a chunk of its own.
import { ACTIONS } from '../app/intents.ts';
import { type CommandSpec, commandHelp, type Flags, mainHelp, parse } from './args.ts';
import { CliError, EXIT, UsageError } from './errors.ts';

type Run = (args: string[], flags: Flags) => Promise<number> | number;

const RUN: Record<string, () => Promise<Run>> = {
  list: async () => (await import('./commands/list.ts')).list,
  get: async () => (await import('./commands/get.ts')).get,
  status: async () => (await import('./commands/status.ts')).status,
  logs: async () => (await import('./commands/logs.ts')).logs,
  set: async () => (await import('./commands/set-image.ts')).setImage,
  version: async () => (await import('./commands/version.ts')).version,
  ...Object.fromEntries(
    ACTIONS.map((a) => [a, async (): Promise<Run> => (await import('./commands/actions.ts')).actionCommand(a)]),
  ),
};

export async function main(argv: readonly string[]): Promise<number> {
  let command: CommandSpec | undefined;
  try {
    const parsed = parse(argv);
    if (parsed.kind === 'help') {
      process.stdout.write(parsed.command ? commandHelp(parsed.command) : mainHelp());
      return EXIT.ok;
    }
    command = parsed.command;
    const load = RUN[command.name];
    if (!load) throw new UsageError(`unknown command "${command.name}"`);
    const run = await load();
    return await run(parsed.args, parsed.flags);
  } catch (err) {
    if (err instanceof UsageError) {
      const about = err.command ?? command?.name;
      process.stderr.write(`error: ${err.message}\nRun "kubectl teal ${about ? `${about} ` : ''}--help" for usage.\n`);
      return err.exitCode;
    }
    if (err instanceof CliError) {
      process.stderr.write(`error: ${err.message}\n`);
      return err.exitCode;
    }
    // A bug, not a user error: keep the stack.
    process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return EXIT.error;
  }
}

// Exit once stdout is flushed: pooled HTTP sockets would otherwise keep the process up for seconds.
const code = await main(process.argv.slice(2));
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
