// /healthz, /readyz and /metrics (src/api/health.ts), through fastify's inject.
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { healthPlugin } from '../../src/api/health.ts';

async function server(state: { ready: boolean; leader: boolean; scrapes: string[] }) {
  const app = Fastify();
  await app.register(healthPlugin, {
    isReady: () => state.ready,
    isLeader: () => state.leader,
    metrics: {
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
      metrics: async () => state.scrapes.at(-1) ?? '',
    },
    beforeScrape: () => state.scrapes.push(`workqueue_depth ${state.scrapes.length}\n`),
  });
  return app;
}

describe('health endpoints', () => {
  it('/healthz answers while the process runs, ready or not', async () => {
    const app = await server({ ready: false, leader: false, scrapes: [] });
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('/readyz is 503 until ready and says whether this replica leads', async () => {
    const state = { ready: false, leader: false, scrapes: [] };
    const app = await server(state);
    const before = await app.inject({ method: 'GET', url: '/readyz' });
    expect(before.statusCode).toBe(503);
    expect(before.json()).toEqual({ status: 'not ready', leader: false });

    Object.assign(state, { ready: true, leader: true });
    const after = await app.inject({ method: 'GET', url: '/readyz' });
    expect(after.statusCode).toBe(200);
    expect(after.json()).toEqual({ status: 'ready', leader: true });
  });

  it('/readyz carries the details it is given, such as the shards held by no live member', async () => {
    const app = Fastify();
    const stranded = [{ shard: 1, lease: 'teal-shard-1', holder: 'stranger' }];
    await app.register(healthPlugin, {
      isReady: () => true,
      isLeader: () => true,
      details: () => ({ shards: { owned: [0, 2], stranded } }),
      metrics: { contentType: 'text/plain', metrics: async () => '' },
    });
    const res = await app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', leader: true, shards: { owned: [0, 2], stranded } });
  });

  it('/metrics sets the scrape-time gauges first, then serves the registry in its content type', async () => {
    const app = await server({ ready: true, leader: true, scrapes: [] });
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.body).toBe('workqueue_depth 0\n');
  });
});
