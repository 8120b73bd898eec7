// Proves the Prometheus the analysis tests query is real and under the test's
// control: Debian's binary on a free loopback port, scraping an exporter whose
// gauges the test sets, answering instant queries with what the test set.
import { existsSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Prometheus, startPrometheus } from '../cluster/prometheus.ts';
import { type Exporter, startExporter } from '../support/exporter.ts';
import { query, waitForScrape } from '../support/prometheus.ts';

let exporter: Exporter;
let prom: Prometheus;

beforeAll(async () => {
  exporter = await startExporter();
  exporter.set('teal_test_success_ratio', { app: 'x' }, 0.99);
  const started = Date.now();
  prom = await startPrometheus({ targets: [exporter.target], log: (line) => console.error(line) });
  const ready = Date.now();
  await waitForScrape(prom.url, 'teal_test_success_ratio{app="x"}', 0.99);
  // For the record, not a bound: how long a test file pays for its Prometheus.
  console.error(`prometheus ready in ${ready - started} ms, first scraped value after ${Date.now() - started} ms`);
});

afterAll(async () => {
  await prom?.stop();
  await exporter?.close();
});

describe('the tests’ Prometheus', () => {
  it('listens on 127.0.0.1 only, on the port it was given', async () => {
    expect(prom.url).toBe(`http://127.0.0.1:${prom.port}`);
    const addresses = await listeningAddresses(prom.pid);
    expect(addresses).toEqual([`127.0.0.1:${prom.port}`]);
  });

  it('scrapes the exporter: an instant query returns the value the test set, with its labels', async () => {
    const [sample, ...rest] = await query(prom.url, 'teal_test_success_ratio{app="x"}');
    expect(rest).toEqual([]);
    expect(sample?.value).toBe(0.99);
    expect(sample?.metric).toEqual({
      __name__: 'teal_test_success_ratio',
      app: 'x',
      job: 'teal-test',
      instance: exporter.target,
    });
  });

  it('sees a changed value after the next scrape, and PromQL works over it', async () => {
    exporter.set('teal_test_success_ratio', { app: 'x' }, 0.5);
    exporter.set('teal_test_success_ratio', { app: 'y' }, 0.25);
    await waitForScrape(prom.url, 'teal_test_success_ratio{app="x"}', 0.5);
    await waitForScrape(prom.url, 'sum(teal_test_success_ratio)', 0.75);
    expect((await query(prom.url, 'scalar(teal_test_success_ratio{app="y"})'))[0]?.value).toBe(0.25);
  });

  it('carries any label value through the text format, quotes, backslashes and newlines too', async () => {
    const odd = 'we"ird\\app\nline';
    exporter.set('teal_test_escaped', { app: odd }, 1);
    const [sample] = await waitForScrape(prom.url, 'teal_test_escaped', 1);
    expect(sample?.metric.app).toBe(odd);
  });

  it('forgets a series the exporter drops', async () => {
    exporter.remove('teal_test_success_ratio', { app: 'y' });
    await waitForScrape(prom.url, 'teal_test_success_ratio{app="y"}', (samples) => samples.length === 0);
    expect(await query(prom.url, 'teal_test_success_ratio{app="x"}')).toHaveLength(1);
  });

  it('reports a bad query as an error', async () => {
    await expect(query(prom.url, 'sum(')).rejects.toThrow(/bad_data/);
  });

  it('stops, and takes its data folder with it', async () => {
    expect(existsSync(prom.dataDir)).toBe(true);
    await prom.stop();
    expect(existsSync(prom.dataDir)).toBe(false);
    await expect(fetch(`${prom.url}/-/ready`)).rejects.toThrow();
  });
});

/** host:port of every TCP socket the process listens on, from /proc (Linux). */
async function listeningAddresses(pid: number): Promise<string[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const found: string[] = [];
  for (const table of ['tcp', 'tcp6']) {
    const lines = (await readFile(`/proc/${pid}/net/${table}`, 'utf8')).split('\n').slice(1);
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      // local_address is field 1, st is field 3 (0A: LISTEN), inode is field 9.
      if (fields[3] === '0A' && inodes.has(fields[9] ?? '')) found.push(decodeAddress(fields[1] ?? ''));
    }
  }
  return found;
}

/** /proc/net/tcp's hex address: IPv4 in host (little-endian) byte order, then the port. */
function decodeAddress(hex: string): string {
  const [ip = '', port = ''] = hex.split(':');
  if (ip.length !== 8) return `[${ip}]:${Number.parseInt(port, 16)}`;
  const octets = (ip.match(/../g) ?? []).map((b) => Number.parseInt(b, 16)).reverse();
  return `${octets.join('.')}:${Number.parseInt(port, 16)}`;
}
