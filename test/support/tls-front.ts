// HTTPS in front of a plain-HTTP server on 127.0.0.1 (the real Gitea of the
// preview tests): Teal takes only https://, ssh:// and file:// git URLs, so an
// App and its build reach Gitea through this, with a throwaway certificate for
// 127.0.0.1 that the test hands to whoever must trust it. TLS ends here; the
// bytes go on unchanged over TCP.
import { connect, type Socket } from 'node:net';
import { createServer } from 'node:tls';
import { selfSignedCertificate } from './git-server.ts';

export interface TlsFront {
  /** https://127.0.0.1:port, no trailing slash. */
  url: string;
  port: number;
  /** The certificate to trust (it is its own CA). */
  caPem: string;
  close: () => Promise<void>;
}

export async function startTlsFront(target: { host: string; port: number }): Promise<TlsFront> {
  const { key, cert } = await selfSignedCertificate();
  const sockets = new Set<Socket>();
  const server = createServer({ key, cert }, (client) => {
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    caPem: cert,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
