// Free TCP ports on the loopback interface, for servers a test starts. No
// vitest import: the cluster tooling (test/cluster) uses it outside the runner.
import { createServer, type Server } from 'node:net';

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port as number;
}

/**
 * count distinct free ports, chosen by the OS. All are held until the last is
 * chosen, so none repeats; once returned they are free again, and whoever binds
 * one later races every other process on the machine for it.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(servers.map(listenOnAnyPort));
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

function listenOnAnyPort(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}
