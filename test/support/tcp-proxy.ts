// A TCP proxy on 127.0.0.1 that can lose packets without refusing anything,
// to put one client of the API server behind a network fault.
import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  port: number;
  /**
   * From now on, what clients send is held instead of forwarded: connections
   * stay open (new ones are accepted) and nothing is refused, so requests hang
   * as behind a link that loses every packet. What the server sends still
   * arrives, as in a one-way partition: an open watch keeps delivering events.
   */
  hold: () => void;
  /** The link heals: held bytes go on to the server, on every connection still open. */
  release: () => void;
  /** Connections open through the proxy. */
  connections: () => number;
  /** Bytes held now, on open connections. */
  heldBytes: () => number;
  /** Bytes that were held when their client went away, and so never reached the server. */
  droppedBytes: () => number;
  close: () => Promise<void>;
}

interface Link {
  client: Socket;
  upstream: Socket;
  held: Buffer[];
}

const size = (chunks: Buffer[]) => chunks.reduce((n, c) => n + c.length, 0);

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let holding = false;
  let dropped = 0;
  const links = new Set<Link>();

  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    const link: Link = { client, upstream, held: [] };
    links.add(link);
    client.on('data', (chunk: Buffer) => {
      // Behind earlier held bytes, even once released, so the stream keeps its order.
      if (holding || link.held.length > 0) link.held.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    // A client that goes away takes what it sent but was lost with it: its TCP
    // would have sent those bytes again, but a closed socket resends nothing.
    const drop = () => {
      if (!links.delete(link)) return;
      dropped += size(link.held);
      link.held = [];
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on('error', () => {});
      socket.on('end', drop);
      socket.on('close', drop);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');

  return {
    port: address.port,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const link of links) {
        if (link.held.length === 0) continue;
        link.upstream.write(Buffer.concat(link.held));
        link.held = [];
      }
    },
    connections: () => links.size,
    heldBytes: () => [...links].reduce((n, l) => n + size(l.held), 0),
    droppedBytes: () => dropped,
    close: async () => {
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      links.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The API server's address, from a kubeconfig's server URL. */
export function apiServerAddress(server: string): { host: string; port: number } {
  const url = new URL(server);
  // An IPv6 hostname keeps its brackets in a URL, not in connect().
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
  };
}
