// kubectl-teal: the kubectl plugin of Teal (`kubectl teal ...`). It works
// with the user's kubeconfig, so the API server enforces their RBAC, and it
// never touches workloads: actions are intents on the App (DESIGN §3.2, §3.5).
//
// Each command's module is imported only when it runs (CommandSpec.load in
// args.ts), so a command loads only what it uses: `version` nothing of
// client-node, `list` not the action rules. In the bundle (scripts/bundle-cli.ts)
// each import is a chunk of its own.
import { type CommandSpec, commandHelp, findCommand, mainHelp, parse } from './args.ts';
import { COMPLETE } from './complete-protocol.ts';
import { CliError, EXIT, UsageError } from './errors.ts';

export async function main(argv: readonly string[]): Promise<number> {
  // kubectl's plugin completion (kubectl_complete-teal), not a command of the user's.
  if (argv[0] === COMPLETE) return (await import('./commands/complete.ts')).complete(argv.slice(1));
  let command: CommandSpec | undefined;
  try {
    const parsed = parse(argv);
    if (parsed.kind === 'help') {
      process.stdout.write(parsed.command ? commandHelp(parsed.command) : mainHelp());
      return EXIT.ok;
    }
    command = parsed.command;
    const run = await command.load();
    return await run(parsed.args, parsed.flags);
  } catch (err) {
    // A command whose exit codes give 1 another meaning (lint) says which code an error ends in.
    const failed = (code: number) => {
      const spec = command ?? (err instanceof UsageError && err.command ? findCommand(err.command) : undefined);
      return spec?.errorExit ?? code;
    };
    if (err instanceof UsageError) {
      const about = err.command ?? command?.name;
      process.stderr.write(`error: ${err.message}\nRun "kubectl teal ${about ? `${about} ` : ''}--help" for usage.\n`);
      return failed(err.exitCode);
    }
    if (err instanceof CliError) {
      process.stderr.write(`error: ${err.message}\n`);
      return failed(err.exitCode);
    }
    // A bug, not a user error: keep the stack.
    process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return failed(EXIT.error);
  }
}

/** Runs the command of `argv` and exits with its code. */
export async function run(argv: readonly string[]): Promise<void> {
  const code = await main(argv);
  // Exit once stdout is flushed: pooled HTTP sockets would otherwise keep the process up for seconds.
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}
