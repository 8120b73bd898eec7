// GET /healthz, /readyz and /metrics, served by every replica: a standby must
// pass its probes and be scraped too (Prometheus would otherwise see a target
// refusing connections). A fastify plugin, kept encapsulated like the others.
import type { FastifyPluginAsync } from 'fastify';

/** The part of a prom-client Registry a scrape reads. */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

export interface HealthOptions {
  /** /readyz answers 200 while true, 503 otherwise: before the caches have synced, and once stopping. */
  isReady: () => boolean;
  /** Said in /readyz's body; true without leader election. */
  isLeader: () => boolean;
  /** More for /readyz's body, such as the shards held by no live member (docs/sharding.md); never its status. */
  details?: () => Record<string, unknown>;
  metrics: MetricsSource;
  /** Sets the gauges read at scrape time, just before each scrape. */
  beforeScrape?: () => void;
}

export const healthPlugin: FastifyPluginAsync<HealthOptions> = async (server, opts) => {
  server.get('/healthz', async () => ({ status: 'ok' }));
  server.get('/readyz', async (_req, reply) => {
    const ready = opts.isReady();
    return reply
      .code(ready ? 200 : 503)
      .send({ status: ready ? 'ready' : 'not ready', leader: opts.isLeader(), ...opts.details?.() });
  });
  server.get('/metrics', async (_req, reply) => {
    opts.beforeScrape?.();
    return reply.header('Content-Type', opts.metrics.contentType).send(await opts.metrics.metrics());
  });
};
