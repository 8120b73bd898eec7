// The two halves of the API server's way into the data plane's network
// namespace (which cannot see the host's 127.0.0.1): inside, the agent's TCP
// listener on 127.0.0.1; outside, the host's Unix socket; both relay with this.
import net from 'node:net';

/** A server that pipes each connection to a new one made by connect, both ended together. */
export function relayServer(connect: () => net.Socket): net.Server {
  return net.createServer((near) => {
    const far = connect();
    const end = () => {
      near.destroy();
      far.destroy();
    };
    near.on('error', end).on('close', end);
    far.on('error', end).on('close', end);
    near.pipe(far).pipe(near);
  });
}
