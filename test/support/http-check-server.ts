// An HTTP server on 127.0.0.1 for web checks (src/analysis/web.ts) to ask: it
// records every request (path, headers, whether the client gave up on it) and
// answers as the test says, request by request, or holds the answer back so a
// measurement stays in flight. Free of vitest.
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';

export interface CheckRequest {
  /** 1 for the first request the server got. */
  n: number;
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  receivedAt: number;
  /** The client closed the connection before an answer was sent (a cancelled measurement). */
  aborted: boolean;
}

/** A status and a body (an object is sent as JSON), or `hold`: no answer until close(). */
export type Answer = { status: number; body: unknown } | 'hold';
export type Answering = (request: CheckRequest) => Answer;

export interface CheckServer {
  /** http://127.0.0.1:port, no trailing slash. */
  url: string;
  requests: CheckRequest[];
  /** The requests whose path (before any query) is `path`. */
  requestsTo: (path: string) => CheckRequest[];
  /** Ends held answers and every open connection. */
  close: () => Promise<void>;
}

export async function startCheckServer(answering: Answering): Promise<CheckServer> {
  const requests: CheckRequest[] = [];
  const held = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const request: CheckRequest = {
      n: requests.length + 1,
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      receivedAt: Date.now(),
      aborted: false,
    };
    requests.push(request);
    // 'close' on the response before it finished: the client went away.
    res.once('close', () => {
      held.delete(res);
      if (!res.writableFinished) request.aborted = true;
    });
    const answer = answering(request);
    if (answer === 'hold') held.add(res);
    else send(res, answer);
  });
  const port = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    requestsTo: (path) => requests.filter((r) => r.url.split('?')[0] === path),
    close: () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function send(res: ServerResponse, { status, body }: { status: number; body: unknown }): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const type = typeof body === 'string' ? 'text/plain' : 'application/json';
  res.writeHead(status, { 'content-type': type }).end(text);
}

function listenOnLoopback(server: Server): Promise<number> {
  // Port 0: the kernel picks a free one, with no window for another process to take it.
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}
