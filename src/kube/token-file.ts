// A kubeconfig user's `tokenFile`, as kubectl reads it. client-node reads only
// `token` and a `token-file` spelling no kubeconfig writes, and drops
// `tokenFile`, so a kubeconfig that kubectl accepts (a ServiceAccount token
// mounted in a CI runner, a token a sidecar rotates) would reach the API server
// anonymously. This reads the kubeconfig files again for that one field and
// gives each such user its token, read at load time.
import { delimiter, dirname, join, resolve } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';

// node:fs and node:os from getBuiltinModule, not imported: importing a built-in as
// a module reads every export of it, and fs.promises loads some twenty more of
// Node's modules (readline among them) at the start of the plugin's `get` (src/cli/rest.ts).
const { existsSync, readFileSync } = process.getBuiltinModule('node:fs');
const { homedir } = process.getBuiltinModule('node:os');

/** The kubeconfig files a load read: the path given, else $KUBECONFIG's, else ~/.kube/config. */
export function kubeconfigPaths(path?: string): string[] {
  if (path) return [path];
  const env = process.env.KUBECONFIG;
  if (env) return env.split(delimiter).filter((p) => p !== '');
  return [join(homedir(), '.kube', 'config')];
}

/** Each user's tokenFile, resolved against its kubeconfig's folder as kubectl does; the first file naming a user wins. */
export function tokenFilesOf(paths: readonly string[]): Map<string, string> {
  const files = new Map<string, string>();
  for (const path of paths) {
    if (!existsSync(path)) continue;
    let doc: unknown;
    try {
      doc = parse(readFileSync(path, 'utf8'));
    } catch {
      continue; // client-node already refused or read it; this reads only what it missed
    }
    const users = (doc as { users?: unknown } | null)?.users;
    if (!Array.isArray(users)) continue;
    for (const entry of users as { name?: unknown; user?: { tokenFile?: unknown } }[]) {
      const file = entry?.user?.tokenFile;
      if (typeof entry?.name !== 'string' || typeof file !== 'string' || file === '' || files.has(entry.name)) continue;
      files.set(entry.name, resolve(dirname(path), file));
    }
  }
  return files;
}

/**
 * Gives each user of the kubeconfig that has no token but a tokenFile the file's content (trimmed,
 * as kubectl sends it). Call it once the current context is chosen: the current user's file that
 * cannot be read is an error naming it, not an anonymous request; another user's is left alone, as
 * kubectl only reads the file of the user it uses.
 */
export function applyTokenFiles(kc: KubeConfig, paths: readonly string[]): void {
  const files = tokenFilesOf(paths);
  if (files.size === 0) return;
  const current = kc.getCurrentUser()?.name;
  kc.loadFromOptions({
    clusters: kc.clusters,
    users: kc.users.map((u) => {
      const file = files.get(u.name);
      if (u.token || !file) return u;
      try {
        return { ...u, token: readFileSync(file, 'utf8').trim() };
      } catch (err) {
        if (u.name !== current) return u;
        throw new Error(`kubeconfig user "${u.name}": cannot read its tokenFile ${file}: ${(err as Error).message}`);
      }
    }),
    contexts: kc.contexts,
    currentContext: kc.getCurrentContext(),
  });
}
