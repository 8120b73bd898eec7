import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseDuration } from '../../src/app/duration.ts';
import { validateApp } from '../../src/app/validate.ts';
import { gitApp, imageApp, invalidApps } from '../fixtures/apps.ts';

describe('App schema', () => {
  it('accepts an image App and fills the defaults', () => {
    const result = validateApp(imageApp());
    if (!result.ok) throw new Error(result.errors.join('\n'));
    const { spec } = result.app;
    expect(spec.strategy.blueGreen).toEqual({
      autoPromotionEnabled: true,
      autoPromotionSeconds: 0,
      scaleDownDelaySeconds: 30,
      abortScaleDownDelaySeconds: 30,
    });
    expect(spec.revisionHistoryLimit).toBe(5);
    expect(spec.progressDeadlineSeconds).toBe(600);
    expect(spec.paused).toBe(false);
    expect(spec.service?.ports[0]?.protocol).toBe('TCP');
  });

  it('accepts a git App, with branches that hold slashes, and fills its defaults', () => {
    const result = validateApp(gitApp());
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.app.spec.source?.git).toMatchObject({ ref: 'feature/new-ui', path: '.', pollInterval: '60s' });
    expect(result.app.spec.build).toMatchObject({ dockerfile: 'Dockerfile', engine: 'buildkit', timeout: '15m' });
  });

  it('accepts a git App without build.image (the operator default registry names its repository)', () => {
    const app = gitApp();
    app.spec.build = {};
    const result = validateApp(app);
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.app.spec.build).toEqual({ dockerfile: 'Dockerfile', engine: 'buildkit', timeout: '15m' });
  });

  it('accepts a git App with no build at all, and gives it the default build settings', () => {
    const app = gitApp();
    delete app.spec.build;
    const result = validateApp(app);
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.app.spec.build).toEqual({ dockerfile: 'Dockerfile', engine: 'buildkit', timeout: '15m' });
  });

  it.each([
    'https://git.example.com/team/app.git',
    'https://git.example.com:8443/team/app',
    'ssh://git@git.example.com:2222/team/app.git',
    'git@github.com:team/app.git',
    'file:///tmp/repos/app',
  ])('accepts the git URL %s', (url) => {
    const app = gitApp();
    if (app.spec.source) app.spec.source.git.url = url;
    expect(validateApp(app).ok).toBe(true);
  });

  it.each(['main', 'release/2026.11', 'v1.4.2', 'a3f1c2d4e5f60718293a4b5c6d7e8f9012345678', 'refs/heads/main'])(
    'accepts the ref %s',
    (ref) => {
      const app = gitApp();
      if (app.spec.source) app.spec.source.git.ref = ref;
      expect(validateApp(app).ok).toBe(true);
    },
  );

  it.each(['repo/app', 'localhost:5000/app:dev', `harbor.example.com/a/b@sha256:${'a'.repeat(64)}`, 'nginx'])(
    'accepts the image %s',
    (image) => {
      const app = imageApp();
      app.spec.image = image;
      expect(validateApp(app).ok).toBe(true);
    },
  );

  it.each(invalidApps)('rejects $title, naming $field', ({ app, field, message }) => {
    const result = validateApp(app());
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const error = result.errors.find((e) => e.startsWith(`${field}: `));
    expect(error, `errors: ${result.errors.join(' | ')}`).toBeDefined();
    expect(error).toMatch(message);
  });
});

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['90s', 90_000],
    ['15m', 900_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    ['1.5s', 1_500],
  ])('reads %s as %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '60', '5d', '-1s', 's'])('refuses %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });
});

describe('config/samples', () => {
  it.each(['app-image.yaml', 'app-git.yaml'])('%s is a valid App', (file) => {
    const app = parse(readFileSync(new URL(`../../config/samples/${file}`, import.meta.url), 'utf8'));
    const result = validateApp(app);
    expect(result.ok ? [] : result.errors).toEqual([]);
  });
});
