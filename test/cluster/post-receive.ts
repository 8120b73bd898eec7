// The demo repository's post-receive hook: one signed generic webhook per
// pushed ref, as a git host would send. Args: webhook URL, secret file, repo URL.
// Reads "<old> <new> <ref>" lines on stdin; never fails the push.
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { secretFromFile } from '../../src/api/webhooks.ts';

const [url, secretFile, repository] = process.argv.slice(2);
if (!url || !secretFile || !repository) {
  console.error('usage: post-receive.ts <webhook-url> <secret-file> <repository-url>');
  process.exit(0);
}
// As the operator reads --webhook-secret-file: one trailing newline is not part of the secret.
const secret = secretFromFile(readFileSync(secretFile));
let input = '';
for await (const chunk of process.stdin) input += chunk;
for (const line of input.split('\n').filter(Boolean)) {
  const ref = line.split(' ')[2];
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
