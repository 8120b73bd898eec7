// The local end of `kubectl teal dashboard`: a listener on 127.0.0.1 only,
// each of whose connections is relayed, bytes as they are, to the operator:
// through the API server with a port-forward to one pod (client-node's
// PortForward over WebSocket, as `kubectl port-forward` does), or over TCP
// to a local operator (--address, make dev). The relay reads nothing of the
// HTTP it carries and adds nothing to it: no credential goes with a
// connection, so another local process that reaches the port meets the
// operator's own login like anyone else.
//
// Why a port-forward and not the API server's service proxy
// (/api/v1/namespaces/NS/services/NAME/proxy/): through the proxy, every
// request of the browser would need the user's credentials added on the way
// (the CLI's listener would then hand the user's Kubernetes identity to any
// local process that connects), the page would live under the proxy's path
// rather than at /, and the proxy rewrites and buffers answers, which a
// live stream does not survive well. A port-forward carries the browser's
// own HTTP/1.1 connection to the operator unchanged; the API server checks
// the user's right to it once per connection (create pods/portforward).
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { type KubeConfig, PortForward } from '@kubernetes/client-node';
import type { ForwardTarget } from './target.ts';

/** Joins one local connection to the operator, both ways; rejects when it cannot. */
export type Connector = (socket: Socket) => Promise<void>;

/** The loopback address the listener binds: nothing else on this machine or network may reach it. */
export const LISTEN_HOST = '127.0.0.1';

/** To an operator at host:port, over TCP. */
export function tcpConnector(host: string, port: number): Connector {
  return (socket) =>
    new Promise((resolve, reject) => {
      const upstream = connect({ host, port });
      upstream.once('connect', () => {
        socket.pipe(upstream).pipe(socket);
        resolve();
      });
      upstream.once('error', (err) => {
        socket.destroy();
        reject(err);
      });
      socket.once('error', () => upstream.destroy());
    });
}

/**
 * Through the API server, to the pod that target() names, one WebSocket per
 * connection. The pod is looked up once and kept (login codes live on the pod
 * that issued them); after a connection that could not be made, the next one
 * looks again, so a replaced pod is found. onError receives what the API
 * server or the kubelet says on the port's error stream.
 */
export function portForwardConnector(
  kc: KubeConfig,
  target: () => Promise<ForwardTarget>,
  onError: (message: string) => void,
): Connector {
  const forward = new PortForward(kc);
  let current: Promise<ForwardTarget> | undefined;
  return async (socket) => {
    const pending = current ?? target();
    current = pending;
    const errors = new Writable({
      write(chunk: Buffer, _encoding, done) {
        onError(chunk.toString('utf8').trim());
        done();
      },
    });
    let ws: Awaited<ReturnType<PortForward['portForward']>>;
    try {
      const { namespace, pod, port } = await pending;
      ws = await forward.portForward(namespace, pod, [port], socket, errors, socket);
    } catch (err) {
      if (current === pending) current = undefined;
      socket.destroy();
      throw err;
    }
    if (typeof ws === 'function') throw new Error('port-forward: a restartable forward was not asked for');
    const socketEnded = () => ws.close();
    ws.on('close', () => socket.end());
    ws.on('error', () => socket.destroy());
    socket.on('error', () => ws.close());
    socket.on('close', socketEnded);
    // Closed while the WebSocket opened: nothing will end it otherwise.
    if (socket.destroyed) socketEnded();
  };
}

export interface Relay {
  port: number;
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1:port (0: a free port) and relays each connection with
 * connect; a connection that cannot be made is closed and reported.
 */
export async function startRelay(port: number, join: Connector, onError: (err: unknown) => void): Promise<Relay> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    join(socket).catch((err: unknown) => {
      socket.destroy();
      onError(err);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: LISTEN_HOST, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the relay has no TCP address');
  return {
    port: address.port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
