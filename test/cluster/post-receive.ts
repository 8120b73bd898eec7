// The demo repository's post-receive hook: one signed generic webhook per
// pushed ref, as a git host would send. Args: webhook URL, secret file, repo URL,
// and with dev's Gitea (dev-gitea.ts) its forge file: the pushed refs go on to
// the Gitea repository first, which the App follows then.
// Reads "<old> <new> <ref>" lines on stdin; never fails the push.
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { secretFromFile } from '../../src/api/webhooks.ts';
import { gitAs, gitUrl } from '../support/gitea.ts';
import type { DevForge } from './dev-gitea.ts';

const [url, secretFile, repository, forgeFile] = process.argv.slice(2);
if (!url || !secretFile || !repository) {
  console.error('usage: post-receive.ts <webhook-url> <secret-file> <repository-url> [<forge-file>]');
  process.exit(0);
}
// As the operator reads --webhook-secret-file: one trailing newline is not part of the secret.
const secret = secretFromFile(readFileSync(secretFile));
let input = '';
for await (const chunk of process.stdin) input += chunk;
const updates = input
  .split('\n')
  .filter(Boolean)
  .map((line) => line.split(' ') as [string, string, string]);
if (forgeFile) await pushOn(forgeFile, updates);
for (const [, , ref] of updates) {
  const body = JSON.stringify({ repository, ref });
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-signature': signature, 'x-delivery-id': randomUUID() },
      body,
      signal: AbortSignal.timeout(5000),
    });
    console.log(`teal: ${ref}: webhook ${res.status} ${await res.text()}`);
  } catch (err) {
    console.log(`teal: ${ref}: webhook not delivered (${String(err)}); Teal will see the push when it polls`);
  }
}

/** The same refs (a deletion too) pushed to dev's Gitea, as its user: no force, so work merged there is never lost. */
async function pushOn(file: string, refs: [string, string, string][]): Promise<void> {
  const deleted = /^0+$/;
  const refspecs = refs.map(([, next, ref]) => (deleted.test(next) ? `:${ref}` : `${next}:${ref}`));
  try {
    const forge = JSON.parse(readFileSync(file, 'utf8')) as DevForge;
    // A hook runs in the bare repository.
    await gitAs(forge.user, { dir: process.cwd() }, 'push', '--quiet', gitUrl(forge, forge.repo), ...refspecs);
    console.log(`teal: pushed to Gitea ${forge.url}/${forge.repo.owner}/${forge.repo.name}`);
  } catch (err) {
    console.log(`teal: not pushed to Gitea: ${err instanceof Error ? err.message : String(err)}`);
  }
}
