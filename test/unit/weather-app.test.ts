// examples/weather-app/app.py, the demo app, run as a real python3 process on
// 127.0.0.1 and asked over HTTP, with a fake OpenWeatherMap for the API mode.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WAIT_MS, waitFor } from '../support/wait.ts';

const APP = fileURLToPath(new URL('../../examples/weather-app/app.py', import.meta.url));
const KEY = 'owm-test-key-5f3c9a71';
const FIELDS = [
  'city',
  'country',
  'temperature',
  'temp_min',
  'temp_max',
  'pressure',
  'humidity',
  'feels_like',
  'description',
  'source',
];

interface Running {
  proc: ChildProcessWithoutNullStreams;
  base: string;
  /** Everything the process wrote so far, stdout and stderr. */
  output: () => string;
}

/** Starts app.py on an ephemeral loopback port; resolves once it says where it listens. */
async function startApp(env: Record<string, string> = {}): Promise<Running> {
  // Only PATH is inherited, so a WEATHER_API_KEY in the developer's shell cannot leak in.
  const proc = spawn('python3', [APP], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...env },
  });
  let out = '';
  for (const stream of [proc.stdout, proc.stderr]) {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      out += chunk;
    });
  }
  const port = await new Promise<number>((resolve, reject) => {
    // Killed here, since the caller never gets a handle to kill it in afterAll.
    // A bound against hangs, not on how fast python starts: a busy machine is slow.
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`app.py did not start within ${WAIT_MS} ms:\n${out}`));
    }, WAIT_MS);
    proc.stdout.on('data', () => {
      const match = /listening on 127\.0\.0\.1:(\d+)\n/.exec(out);
      if (!match?.[1]) return;
      clearTimeout(timer);
      resolve(Number(match[1]));
    });
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`app.py exited with ${code}:\n${out}`)));
  });
  return { proc, base: `http://127.0.0.1:${port}`, output: () => out };
}

async function stopApp(app: Running | undefined): Promise<void> {
  if (!app || app.proc.exitCode !== null || app.proc.signalCode !== null) return;
  const exited = once(app.proc, 'exit');
  app.proc.kill('SIGKILL');
  await exited;
}

/** The app logs a request after answering it, so its line may come a little after the response. */
async function outputWhen(app: Running | undefined, done: (output: string) => boolean): Promise<string> {
  await waitFor('the log line', async () => (done(app?.output() ?? '') ? true : undefined), { intervalMs: 20 }).catch(
    () => {},
  );
  return app?.output() ?? '';
}

/** A response as raw text, to see what fetch hides (a body sent after HEAD). */
async function rawRequest(base: string, requestLine: string): Promise<string> {
  const socket = connect(Number(new URL(base).port), '127.0.0.1');
  socket.end(`${requestLine}\r\nHost: 127.0.0.1\r\n\r\n`);
  let text = '';
  for await (const chunk of socket) text += String(chunk);
  return text;
}

async function getJson(url: string, init?: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('weather app with sample data', () => {
  let app: Running | undefined;
  const base = () => app?.base ?? '';

  beforeAll(async () => {
    app = await startApp({ VERSION: '1.4.2' });
  });
  afterAll(() => stopApp(app));

  it('answers the probes on /healthz, with its version', async () => {
    expect(await getJson(`${base()}/healthz`)).toEqual({ status: 200, body: { status: 'ok', version: '1.4.2' } });
  });

  it('serves a sample city with every field, whatever its case and spacing', async () => {
    const { status, body } = await getJson(`${base()}/weather?city=${encodeURIComponent('  SeOuL ')}`);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual([...FIELDS].sort());
    expect(body).toMatchObject({ city: 'Seoul', country: 'KR', source: 'sample' });
    for (const field of ['temperature', 'temp_min', 'temp_max', 'pressure', 'humidity', 'feels_like']) {
      expect(typeof body[field], field).toBe('number');
    }
    expect(typeof body.description).toBe('string');
  });

  it('refuses a missing or empty city with 400 naming the parameter', async () => {
    for (const path of ['/weather', '/weather?city=', '/weather?city=%20%20']) {
      const { status, body } = await getJson(`${base()}${path}`);
      expect(status, path).toBe(400);
      expect(body.error, path).toMatch(/\bcity\b/);
    }
  });

  it('answers 404 for a city without sample data, and for an unknown path', async () => {
    const city = await getJson(`${base()}/weather?city=atlantis`);
    expect(city.status).toBe(404);
    expect(city.body.error).toMatch(/atlantis/);
    const path = await getJson(`${base()}/forecast`);
    expect(path.status).toBe(404);
    expect(path.body.error).toEqual(expect.any(String));
  });

  it('allows GET and HEAD only', async () => {
    const post = await fetch(`${base()}/weather?city=seoul`, { method: 'POST', body: '{}' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(await post.json()).toHaveProperty('error');
    const [headers, body] = (await rawRequest(base(), 'HEAD /healthz HTTP/1.1')).split('\r\n\r\n');
    expect(headers).toMatch(/^HTTP\/1\.[01] 200 /);
    expect(headers).toMatch(/^Content-Length: [1-9]\d*$/im);
    expect(body).toBe('');
  });

  it('logs one line per request, with the path but not the query', async () => {
    const lines = (out: string) => out.match(/^GET \/weather 200 \d+\.\d+ms$/gm)?.length ?? 0;
    const before = lines(app?.output() ?? '');
    await getJson(`${base()}/weather?city=tokyo`);
    const output = await outputWhen(app, (out) => lines(out) > before);
    expect(lines(output)).toBe(before + 1);
    expect(output).not.toContain('tokyo');
  });
});

describe('weather app with an API key', () => {
  let app: Running | undefined;
  let upstream: Server | undefined;
  const seen: URL[] = [];
  const base = () => app?.base ?? '';

  beforeAll(async () => {
    // A fake OpenWeatherMap: the city picks the answer.
    upstream = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://upstream');
      seen.push(url);
      const city = url.searchParams.get('q');
      if (city === 'boom') {
        res.writeHead(500, { 'content-type': 'application/json' }).end(`{"message":"broken, your key ${KEY}"}`);
      } else if (city === 'hangup') {
        req.socket.destroy();
      } else if (city !== 'new york') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"cod":"404","message":"city not found"}');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            name: 'New York',
            sys: { country: 'US' },
            weather: [{ main: 'Clouds', description: 'broken clouds' }],
            main: { temp: 11.5, feels_like: 10.2, temp_min: 9.1, temp_max: 13.4, pressure: 1021, humidity: 64 },
          }),
        );
      }
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const { port } = upstream.address() as AddressInfo;
    app = await startApp({ WEATHER_API_KEY: KEY, WEATHER_API_URL: `http://127.0.0.1:${port}/` });
  });
  afterAll(async () => {
    await stopApp(app);
    upstream?.close();
  });

  it('asks OpenWeatherMap in metric units and maps its answer', async () => {
    const { status, body } = await getJson(`${base()}/weather?city=new%20york`);
    expect(status).toBe(200);
    expect(body).toEqual({
      city: 'New York',
      country: 'US',
      temperature: 11.5,
      temp_min: 9.1,
      temp_max: 13.4,
      pressure: 1021,
      humidity: 64,
      feels_like: 10.2,
      description: 'broken clouds',
      source: 'openweathermap',
    });
    const request = seen.at(-1);
    expect(request?.pathname).toBe('/data/2.5/weather');
    expect(request?.search).toBe(`?q=new%20york&appid=${KEY}&units=metric`);
  });

  it('answers 404 when OpenWeatherMap does not know the city', async () => {
    const { status, body } = await getJson(`${base()}/weather?city=atlantis`);
    expect(status).toBe(404);
    expect(body.error).toMatch(/atlantis/);
  });

  it('answers 502 when OpenWeatherMap fails, and never shows the key', async () => {
    for (const city of ['boom', 'hangup']) {
      const res = await fetch(`${base()}/weather?city=${city}`);
      const text = await res.text();
      expect(res.status, city).toBe(502);
      expect(JSON.parse(text), city).toHaveProperty('error');
      expect(text, city).not.toContain(KEY);
      expect(text, city).not.toContain('appid');
    }
    expect(seen.map((url) => url.searchParams.get('q'))).toEqual(expect.arrayContaining(['boom', 'hangup']));
    const output = await outputWhen(app, (out) => (out.match(/^GET \/weather 502 /gm)?.length ?? 0) >= 2);
    expect(output.match(/^GET \/weather 502 /gm)).toHaveLength(2);
    expect(output).not.toContain(KEY);
    expect(output).not.toContain('appid');
  });
});

describe('weather app shutdown', () => {
  let app: Running | undefined;
  afterAll(() => stopApp(app));

  it('exits with code 0 on SIGTERM', async () => {
    app = await startApp();
    const exited = once(app.proc, 'exit');
    app.proc.kill('SIGTERM');
    expect(await exited).toEqual([0, null]);
  });
});
