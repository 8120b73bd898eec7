// The flags as the commands read them, typed: what args.ts makes of the
// command line. A file of its own so a command's module imports its type
// without importing the command table (args.ts), which imports the commands.
import type { ActionArgs } from '../app/action-args.ts';

/** What -o prints: the data, not the text. formatData (output.ts) writes it. */
export const FORMATS = ['json', 'yaml'] as const;
export type Format = (typeof FORMATS)[number];

/** The flags of every command; an action's arguments (a switch not given: false) among them. */
export interface Flags extends ActionArgs {
  namespace: string | undefined;
  allNamespaces: boolean;
  context: string | undefined;
  kubeconfig: string | undefined;
  output: Format | undefined;
  help: boolean;
  watch: boolean;
  timeout: string | undefined;
  follow: boolean;
  commit: string | undefined;
  check: string | undefined;
  /** dashboard: where to listen, what to reach, whether to open a browser. */
  port: string | undefined;
  address: string | undefined;
  service: string | undefined;
  noBrowser: boolean;
  /** lint: the drain to hold the pods' shutdown against. */
  drain: string | undefined;
}
