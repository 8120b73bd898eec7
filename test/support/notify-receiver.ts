// A notification receiver on 127.0.0.1 for the e2e tests and `make dev`: it
// records each delivery, checks its signature with Teal's own webhook
// verification (the generic provider's X-Signature), and answers as told.
// Free of vitest, so that test/cluster/cli.ts shares it.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySignature } from '../../src/api/webhook-providers.ts';

export interface Delivery {
  id: string;
  trigger: string;
  /** The header and the body's id agree. */
  idsAgree: boolean;
  /** undefined when the receiver has no signing key. */
  verified?: boolean;
  body: Record<string, unknown>;
  status: number;
}

export interface ReceiverOptions {
  /** The key the signatures must verify with. */
  signingKey?: string;
  /** The status of each request in turn; the last one repeats. Default 200. */
  answers?: number[];
  /** Holds the first request open, unanswered, until release() (a kill -9 is meant to come meanwhile). */
  holdFirst?: boolean;
  onDelivery?: (d: Delivery) => void;
}

export interface Receiver {
  /** With a token in its query, as a real webhook URL may have: it must never reach a log. */
  url: string;
  token: string;
  deliveries: Delivery[];
  /** Resolves once a request is being held. */
  held: Promise<Delivery>;
  release: () => void;
  close: () => Promise<void>;
}

export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const answers = options.answers ?? [200];
  let onHeld: (d: Delivery) => void = () => {};
  const held = new Promise<Delivery>((resolve) => {
    onHeld = resolve;
  });
  const heldResponses: ServerResponse[] = [];
  let requests = 0;
  const server = createServer((req, res) => {
    void readBody(req).then((raw) => {
      const index = requests++;
      const status = answers[Math.min(index, answers.length - 1)] ?? 200;
      const delivery = describe(req, raw, status, options.signingKey);
      deliveries.push(delivery);
      options.onDelivery?.(delivery);
      if (options.holdFirst && index === 0) {
        heldResponses.push(res);
        onHeld(delivery);
        return;
      }
      res.statusCode = status;
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const token = `tok-${port}-${Math.random().toString(36).slice(2)}`;
  return {
    url: `http://127.0.0.1:${port}/notify?token=${token}`,
    token,
    deliveries,
    held,
    release: () => {
      for (const res of heldResponses.splice(0)) res.destroy();
    },
    close: async () => {
      for (const res of heldResponses.splice(0)) res.destroy();
      server.closeAllConnections();
      server.close();
    },
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function describe(req: IncomingMessage, raw: Buffer, status: number, signingKey?: string): Delivery {
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  } catch {
    // Recorded as it is: the test looks at the fields.
  }
  const id = String(req.headers['x-teal-delivery'] ?? '');
  return {
    id,
    trigger: String(req.headers['x-teal-trigger'] ?? ''),
    idsAgree: body.id === id,
    ...(signingKey !== undefined ? { verified: verifySignature('generic', req.headers, raw, signingKey) } : {}),
    body,
    status,
  };
}
