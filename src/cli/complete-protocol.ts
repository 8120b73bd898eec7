// The completion protocol of cobra's hidden __complete command, which kubectl
// (1.26+) speaks with kubectl_complete-teal: the words typed after "teal" in,
// the last one the word being completed (empty after a space); candidates out,
// one a line ("value<TAB>description"), then ":<directive>". completion.ts
// finds the candidates; the scripts of `kubectl teal completion SHELL` read them.

/** The hidden first word that asks for completions instead of running a command. */
export const COMPLETE = '__complete';

/** cobra's ShellCompDirective bits (completions.go), which kubectl passes on to the shell's script. */
export const DIRECTIVE = {
  /** Let the shell complete file names when there is no candidate. */
  default: 0,
  /** Never complete file names. */
  noFileComp: 4,
} as const;

export interface Candidate {
  value: string;
  description?: string;
}

/** Candidates as kubectl reads them: "value<TAB>description" a line, then ":<directive>". */
export function formatCompletion(list: readonly Candidate[], directive: number): string {
  const oneLine = (text: string) => text.replace(/\s+/g, ' ');
  const lines = list.map((c) => (c.description ? `${c.value}\t${oneLine(c.description)}` : c.value));
  return [...lines, `:${directive}`, ''].join('\n');
}
