// A Prometheus exporter on 127.0.0.1 whose gauges the test sets, for the real
// Prometheus of test/cluster/prometheus.ts to scrape. Free of vitest.
import { createServer, type Server } from 'node:http';

export type Labels = Record<string, string>;

export interface Exporter {
  /** What Prometheus scrapes: 127.0.0.1:port (path /metrics). */
  target: string;
  port: number;
  /** Sets one gauge series; the next scrape sees the new value. */
  set: (name: string, labels: Labels, value: number) => void;
  /** Drops one series: Prometheus marks it stale after its next scrape, and queries stop returning it. */
  remove: (name: string, labels: Labels) => void;
  /** The /metrics body the next scrape gets. */
  render: () => string;
  /** How many scrapes it has answered. */
  scrapes: () => number;
  close: () => Promise<void>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export async function startExporter(): Promise<Exporter> {
  // name -> series key (its rendered labels) -> value
  const gauges = new Map<string, Map<string, number>>();
  let scrapes = 0;
  const render = () => renderGauges(gauges);
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    scrapes++;
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(render());
  });
  const port = await listenOnLoopback(server);
  return {
    target: `127.0.0.1:${port}`,
    port,
    set: (name, labels, value) => {
      const series = gauges.get(checkName(name)) ?? new Map<string, number>();
      series.set(renderLabels(labels), value);
      gauges.set(name, series);
    },
    remove: (name, labels) => {
      const series = gauges.get(name);
      series?.delete(renderLabels(labels));
      if (series?.size === 0) gauges.delete(name);
    },
    render,
    scrapes: () => scrapes,
    close: () => closeServer(server),
  };
}

/** The text exposition format (version 0.0.4), every metric a gauge. */
export function renderGauges(gauges: ReadonlyMap<string, ReadonlyMap<string, number>>): string {
  const lines: string[] = [];
  for (const [name, series] of gauges) {
    lines.push(`# TYPE ${name} gauge`);
    for (const [labels, value] of series) lines.push(`${name}${labels} ${formatValue(value)}`);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** `{a="1",b="2"}`, sorted, so the same labels in another order name the same series. */
export function renderLabels(labels: Labels): string {
  const pairs = Object.entries(labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${checkLabel(key)}="${escapeLabelValue(value)}"`);
  return pairs.length ? `{${pairs.join(',')}}` : '';
}

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

function checkName(name: string): string {
  if (!NAME.test(name)) throw new Error(`not a metric name: ${name}`);
  return name;
}

function checkLabel(label: string): string {
  if (!LABEL.test(label) || label.startsWith('__')) throw new Error(`not a label name: ${label}`);
  return label;
}

function listenOnLoopback(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  // Prometheus keeps its scrape connection open: close it too, or close() waits on it.
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
