// A forward HTTP proxy on 127.0.0.1 for the tests, as a company's egress
// proxy: CONNECT tunnels (https) and absolute-form requests (plain http), with
// Basic proxy auth when given credentials. It reaches 127.0.0.1 only: a name
// it is told of stands for 127.0.0.1 (as its DNS would resolve it), any other
// target is refused, so nothing leaves the machine. It records what it carried.
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface ProxiedRequest {
  method: string;
  /** host:port, as the client asked for it. */
  target: string;
  /** Whether the client sent the proxy's credentials. */
  authorized: boolean;
}

export interface HttpProxy {
  port: number;
  /** http://[user:password@]127.0.0.1:port */
  url: string;
  /** Everything asked of it, carried or refused (407 without credentials). */
  readonly requests: readonly ProxiedRequest[];
  stop(): Promise<void>;
}

export interface HttpProxyOptions {
  /** Proxy-Authorization the clients must send (407 otherwise). */
  credentials?: { user: string; password: string };
  /** Host names that stand for 127.0.0.1. */
  names?: readonly string[];
}

export async function startHttpProxy(options: HttpProxyOptions = {}): Promise<HttpProxy> {
  const requests: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  const expected = options.credentials
    ? `Basic ${Buffer.from(`${options.credentials.user}:${options.credentials.password}`).toString('base64')}`
    : undefined;
  const authorized = (req: IncomingMessage) =>
    expected === undefined || req.headers['proxy-authorization'] === expected;
  /** The loopback port a target stands for, or undefined when it is not one to reach. */
  const loopbackPort = (target: string): number | undefined => {
    const match = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(target);
    if (!match) return undefined;
    const [, host = '', port = ''] = match;
    const local = host === '127.0.0.1' || host === 'localhost' || (options.names ?? []).includes(host);
    return local ? Number(port) : undefined;
  };

  const server: Server = createServer((req, res) => {
    // Plain http through the proxy: an absolute-form URL.
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end();
      return;
    }
    const target = `${url.hostname}:${url.port || '80'}`;
    const ok = authorized(req);
    requests.push({ method: req.method ?? '', target, authorized: ok });
    const port = loopbackPort(target);
    if (!ok) return void res.writeHead(407, { 'Proxy-Authenticate': 'Basic realm="proxy"' }).end();
    if (port === undefined) return void res.writeHead(403).end();
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const upstream = httpRequest(
      { host: '127.0.0.1', port, method: req.method, path: `${url.pathname}${url.search}`, headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => {});
    const target = req.url ?? '';
    const ok = authorized(req);
    requests.push({ method: 'CONNECT', target, authorized: ok });
    const port = loopbackPort(target);
    if (!ok) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="proxy"\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
      );
      return;
    }
    if (port === undefined) {
      client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    const upstream = connect(port, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  const auth = options.credentials
    ? `${encodeURIComponent(options.credentials.user)}:${encodeURIComponent(options.credentials.password)}@`
    : '';
  return {
    port,
    url: `http://${auth}127.0.0.1:${port}`,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
