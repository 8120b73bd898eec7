// `kubectl_complete-teal WORDS...` (bin/kubectl-teal run under that name, so
// `kubectl-teal __complete WORDS...`): kubectl's plugin completion asks it what
// completes the last word. It answers quietly: on any error, nothing to offer,
// never a message or a stack trace on the user's terminal (kubectl passes
// stderr through), and App names only if the cluster answers within
// APP_LIST_TIMEOUT_MS, so a <TAB> never hangs.
import { type Candidate, DIRECTIVE, formatCompletion } from '../complete-protocol.ts';
import { completeWords, matching } from '../completion.ts';
import { EXIT } from '../errors.ts';
import type { ConnectOptions } from '../kube.ts';

/** How long <TAB> waits for the App names before it offers none. */
const APP_LIST_TIMEOUT_MS = 5000;

/** The names of the Apps in the namespace; none on any error or after the timeout. */
async function appNames(connect: ConnectOptions): Promise<Candidate[]> {
  const none = new Promise<Candidate[]>((resolve) => setTimeout(() => resolve([]), APP_LIST_TIMEOUT_MS).unref());
  const listed = (async (): Promise<Candidate[]> => {
    // client-node is loaded only here: commands and flags complete without it.
    const { Session } = await import('../kube.ts');
    const apps = await new Session(connect).listApps(false);
    return apps.map((app) => ({ value: app.metadata.name })).sort((a, b) => a.value.localeCompare(b.value));
  })().catch((): Candidate[] => []);
  return Promise.race([listed, none]);
}

async function answer(words: readonly string[]): Promise<string> {
  const completion = completeWords(words);
  if (completion.kind === 'candidates') return formatCompletion(completion.candidates, completion.directive);
  return formatCompletion(matching(await appNames(completion.connect), completion.prefix), DIRECTIVE.noFileComp);
}

export async function complete(words: readonly string[]): Promise<number> {
  const out = await answer(words).catch(() => formatCompletion([], DIRECTIVE.noFileComp));
  process.stdout.write(out);
  return EXIT.ok;
}
