// kubectl-teal: the kubectl plugin of Teal (`kubectl teal ...`). It works
// with the user's kubeconfig, so the API server enforces their RBAC, and it
// never touches workloads: actions are intents on the App (DESIGN §3.2, §3.5).
import { ACTIONS } from '../app/intents.ts';
import { type CommandSpec, commandHelp, type Flags, mainHelp, parse } from './args.ts';
import { actionCommand } from './commands/actions.ts';
import { get } from './commands/get.ts';
import { list } from './commands/list.ts';
import { logs } from './commands/logs.ts';
import { setImage } from './commands/set-image.ts';
import { status } from './commands/status.ts';
import { version } from './commands/version.ts';
import { CliError, EXIT, UsageError } from './errors.ts';

type Run = (args: string[], flags: Flags) => Promise<number> | number;

const RUN: Record<string, Run> = {
  list,
  get,
  status,
  logs,
  set: setImage,
  version,
  ...Object.fromEntries(ACTIONS.map((a) => [a, actionCommand(a)])),
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
    const run = RUN[command.name];
    if (!run) throw new UsageError(`unknown command "${command.name}"`);
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
