// The actions (promote, abort, ...) and the arguments each takes, declared
// once, without zod: the CLI's command table (src/cli/args.ts) reads them on
// every start, `kubectl teal version` included, and loading zod would cost it
// a tenth of its time (issue #27 item 2). intents.ts builds the schemas from
// them and re-exports them.
export const ACTIONS = ['promote', 'abort', 'retry', 'undo', 'pause', 'resume', 'restart'] as const;
export type Action = (typeof ACTIONS)[number];

// ---- the arguments of each action, declared once ----

/**
 * How an argument is written, with the value it is read as: a revision number
 * (1, 2, ...) or a switch. intents.ts's schema of each kind is checked against it.
 */
export interface ValueOfKind {
  revision: number;
  switch: boolean;
}
export type ArgKind = keyof ValueOfKind;

export interface ArgDeclaration {
  kind: ArgKind;
  /** What it does, in the CLI's help. */
  help: string;
}

/**
 * The arguments each action takes: the one declaration from which the HTTP
 * API's body, the CLI's flags (--kebab-case of the name) and their help, the
 * intent annotation and the rules (ActionArgs) all derive, so an argument
 * cannot be accepted by one and unknown to another. In the order the CLI's
 * usage line shows them. A name means the same in every action that takes it.
 */
export const ACTION_ARGS = {
  promote: {
    full: { kind: 'switch', help: 'skip the remaining waits and, as in Argo Rollouts, the checks' },
    revision: { kind: 'revision', help: 'promote only if revision N is the one in preview (refused otherwise)' },
    skipChecks: {
      kind: 'switch',
      help: 'promote without waiting for the checks (prePromotionAnalysis); recorded in history',
    },
  },
  abort: {},
  retry: {},
  undo: {
    toRevision: { kind: 'revision', help: 'the revision to return to (default: the previous stable one)' },
    preview: { kind: 'switch', help: 'stage it as a preview, to promote, instead of going active at once' },
  },
  pause: {},
  resume: {},
  restart: {},
} as const satisfies Record<Action, Record<string, ArgDeclaration>>;

type Declared = typeof ACTION_ARGS;
/** The name of an argument of any action. */
export type ArgName = { [A in Action]: keyof Declared[A] }[Action];
type KindOf<K extends ArgName> = {
  [A in Action]: K extends keyof Declared[A]
    ? Declared[A][K] extends { kind: infer T extends ArgKind }
      ? T
      : never
    : never;
}[Action];

/** The arguments an action may carry (an intent's, an API body's, the CLI's flags), as the rules read them. */
export type ActionArgs = { [K in ArgName]?: ValueOfKind[KindOf<K>] };

/** The arguments an action takes, in declared order. */
export function argsOf(action: Action): [ArgName, ArgDeclaration][] {
  return Object.entries(ACTION_ARGS[action]) as [ArgName, ArgDeclaration][];
}

/** An argument's flag on the command line, without its dashes: the name in kebab case, as skip-checks for skipChecks. */
export const flagOf = (name: ArgName): string => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** Every argument of any action, once each. */
export function allArgs(): [ArgName, ArgDeclaration][] {
  return [...new Map(ACTIONS.flatMap(argsOf)).entries()];
}
