// The dashboard's files (issue #25), served from memory under /: index.html at
// each page's path (the UI's router shows the page), app.js and app.css under
// /ui/. The pages hold no data: what they show comes from /api/v1, which
// authenticates and authorizes every call. The files are read once, at start.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { DASHBOARD_ASSETS, DASHBOARD_PAGES } from '../app/dashboard-pages.ts';

/** The built files (scripts/bundle-ui.ts), read from a folder. */
export interface DashboardFiles {
  html: Buffer;
  js: Buffer;
  css: Buffer;
}

/** Reads the built dashboard from dir; throws, naming the file, when one is missing. */
export function readDashboardFiles(dir: string): DashboardFiles {
  const read = (name: string) => readFileSync(join(dir, name));
  return { html: read('index.html'), js: read('app.js'), css: read('app.css') };
}

export interface DashboardOptions {
  files: DashboardFiles;
}

export const dashboardPlugin: FastifyPluginAsync<DashboardOptions> = async (fastify: FastifyInstance, { files }) => {
  for (const path of Object.values(DASHBOARD_PAGES)) {
    // no-store: a new operator's page names its own script at once.
    fastify.get(path, (_request, reply) =>
      reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(files.html),
    );
  }
  // Unhashed names: the browser asks again at each load (no-cache), so an upgraded operator's files show at once.
  fastify.get(DASHBOARD_ASSETS.js, (_request, reply) =>
    reply.header('cache-control', 'no-cache').type('text/javascript; charset=utf-8').send(files.js),
  );
  fastify.get(DASHBOARD_ASSETS.css, (_request, reply) =>
    reply.header('cache-control', 'no-cache').type('text/css; charset=utf-8').send(files.css),
  );
};
