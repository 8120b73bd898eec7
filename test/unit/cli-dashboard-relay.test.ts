// The local end of `kubectl teal dashboard` (src/cli/dashboard/relay.ts) with
// real sockets on 127.0.0.1: bytes relayed both ways and each side ended with
// the other, the listener on 127.0.0.1 alone, and a connection the operator
// refuses closed and reported. The port-forward path is in
// test/e2e/dashboard-cli.test.ts, through the real API server.
import { connect, createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type Relay, startRelay, tcpConnector } from '../../src/cli/dashboard/relay.ts';
import { waitFor } from '../support/wait.ts';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** An upstream that answers each connection with what it read, upper-cased, then ends. */
async function shoutingServer(): Promise<number> {
  const server: Server = createServer((socket) => {
    socket.once('data', (chunk) => socket.end(chunk.toString().toUpperCase()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as { port: number }).port;
}

async function relayTo(port: number, errors: unknown[]): Promise<Relay> {
  const relay = await startRelay(0, tcpConnector('127.0.0.1', port), (err) => errors.push(err));
  closers.push(() => relay.close());
  return relay;
}

/** What a client that sends text through the relay reads back before the relay ends the connection. */
function exchange(host: string, port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let read = '';
    const socket = connect({ host, port }, () => socket.write(text));
    socket.on('data', (chunk) => {
      read += chunk.toString();
    });
    socket.once('end', () => resolve(read));
    socket.once('error', reject);
  });
}

describe("kubectl teal dashboard's relay", () => {
  it('relays bytes both ways and ends the connection when the operator does', async () => {
    const relay = await relayTo(await shoutingServer(), []);
    expect(await exchange('127.0.0.1', relay.port, 'get / http/1.1')).toBe('GET / HTTP/1.1');
  });

  it('listens on 127.0.0.1 alone: another loopback address is refused', async () => {
    const relay = await relayTo(await shoutingServer(), []);
    await expect(exchange('127.0.0.2', relay.port, 'x')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('closes a connection the operator refuses, and reports why', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const errors: unknown[] = [];
    const relay = await relayTo(port, errors);
    expect(await exchange('127.0.0.1', relay.port, 'x')).toBe('');
    await waitFor('the failure to be reported', async () => (errors.length > 0 ? true : undefined));
    expect(errors[0]).toMatchObject({ code: 'ECONNREFUSED' });
  });
});
