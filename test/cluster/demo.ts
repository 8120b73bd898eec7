// The weather-app demo for `make dev`: examples/weather-app as a local git
// repository (a bare "remote" and a working clone), a post-receive hook that
// tells Teal about each push through its signed generic webhook, and the App
// from examples/weather-app/app.yaml pointed at that repository.
import { randomBytes } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { simpleGit } from 'simple-git';

const root = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE = join(root, 'examples/weather-app');
const HOOK = fileURLToPath(new URL('./post-receive.ts', import.meta.url));
const PLACEHOLDER_URL = 'https://git.example.com/team/weather-app.git';

export interface Demo {
  /** The bare repository the App follows. */
  remote: string;
  /** The working clone to edit, commit and push from. */
  clone: string;
  /** The App manifest, with the local repository's URL. */
  manifest: string;
  /** The global webhook secret, for the operator's --webhook-secret-file. */
  secretFile: string;
  /** True when an existing clone from an earlier run was kept. */
  reused: boolean;
}

const author = { name: 'Teal demo', email: 'demo@teal.invalid' };

export interface DemoOptions {
  /**
   * The URL the App follows and the hook announces: by default the bare
   * repository's file:// URL (the operator's --allow-file-git); the real-build
   * mode serves it over HTTPS (real-dev.ts).
   */
  repositoryUrl?: string;
  /** dev's Gitea (dev-gitea.ts): the hook pushes each ref on to it before the webhook. */
  forgeFile?: string;
}

export async function prepareDemo(workdir: string, webhookUrl: string, options: DemoOptions = {}): Promise<Demo> {
  const remote = join(workdir, 'weather-app.git');
  const clone = join(workdir, 'weather-app');
  const secretFile = join(workdir, 'webhook-secret');
  mkdirSync(workdir, { recursive: true });
  if (!existsSync(secretFile)) writeFileSync(secretFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  // A clone from an earlier run may hold the user's work: keep it and its remote.
  const reused = existsSync(join(clone, '.git')) && existsSync(remote);
  if (!reused) {
    mkdirSync(remote, { recursive: true });
    await simpleGit(remote).init(true, ['--initial-branch=main']);
    cpSync(EXAMPLE, clone, { recursive: true, filter: (src) => !src.includes('__pycache__') });
    const git = simpleGit(clone);
    await git.init(['--initial-branch=main']);
    await git.addConfig('user.name', author.name).addConfig('user.email', author.email);
    await git.add('.').commit('weather-app: first version');
    await git.addRemote('origin', remote).push(['--set-upstream', 'origin', 'main']);
  }
  const url = options.repositoryUrl ?? pathToFileURL(remote).href;
  const hook = join(remote, 'hooks/post-receive');
  writeFileSync(
    hook,
    `#!/bin/sh\n# Tells the local Teal about the push (signed generic webhook); polling is the fallback.\nexec "${process.execPath}" "${HOOK}" "${webhookUrl}" "${secretFile}" "${url}"${options.forgeFile ? ` "${options.forgeFile}"` : ''}\n`,
  );
  chmodSync(hook, 0o755);
  const manifest = readFileSync(join(EXAMPLE, 'app.yaml'), 'utf8').replace(PLACEHOLDER_URL, url);
  if (!manifest.includes(url)) {
    throw new Error(`examples/weather-app/app.yaml no longer holds the url ${PLACEHOLDER_URL}`);
  }
  return { remote, clone, manifest, secretFile, reused };
}
