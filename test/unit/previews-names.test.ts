// Names stay DNS-safe (issue #28 item 8): <app>-pr-<number>, cut and
// hash-suffixed when too long, and every host label at most 63 characters.
import { describe, expect, it } from 'vitest';
import { DNS1035_LABEL, DNS1123_LABEL } from '../../src/app/patterns.ts';
import { expandHost, hostLabel, MAX_PREVIEW_NAME, previewName } from '../../src/previews/names.ts';
import { ofKind, parentApp, planFor, pullRequest, valid } from '../fixtures/previews.ts';

const LONG = `w${'x'.repeat(54)}`; // 55 characters: the longest App name without a previewService

describe('previewName', () => {
  it('is <app>-pr-<number> when that fits', () => {
    expect(previewName('weather', 12)).toBe('weather-pr-12');
  });

  it.each([
    [LONG, 7],
    [LONG, 123456],
    [`a${'b'.repeat(62)}`, Number.MAX_SAFE_INTEGER],
  ])('cuts %s with #%i to at most 55 characters, a DNS-1035 label ending in -pr-<number>', (app, number) => {
    const name = previewName(app, number);
    expect(name.length).toBeLessThanOrEqual(MAX_PREVIEW_NAME);
    expect(name).toMatch(DNS1035_LABEL);
    expect(name.endsWith(`-pr-${number}`)).toBe(true);
  });

  it('keeps two long names that share their start apart (a hash of the whole name)', () => {
    const a = previewName(`${LONG.slice(0, 50)}aaaaa`, 7);
    const b = previewName(`${LONG.slice(0, 50)}bbbbb`, 7);
    expect(a).not.toBe(b);
    expect(a.slice(0, 30)).toBe(b.slice(0, 30));
  });

  it('names a child App that the App schema accepts, with the longest parent name', () => {
    const app = parentApp((_, input) => {
      input.metadata.name = LONG;
    });
    const [create] = ofKind(planFor(app, [pullRequest(987654321)]), 'createChild');
    if (!create) throw new Error('no child');
    expect(create.manifest.metadata.name).toBe(previewName(LONG, 987654321));
    expect(() => valid(create.manifest)).not.toThrow();
    for (const value of Object.values(create.manifest.metadata.labels)) expect(value.length).toBeLessThanOrEqual(63);
  });
});

it('takes nothing from the title or branch: a hostile one changes no name, label or annotation', () => {
  const hostile = `$(rm -rf /)\n<script>\u0000${'ä'.repeat(200)}`;
  const plain = ofKind(planFor(parentApp(), [pullRequest(5)]), 'createChild')[0]?.manifest;
  const odd = ofKind(planFor(parentApp(), [pullRequest(5, { title: hostile, baseBranch: 'main' })]), 'createChild')[0]
    ?.manifest;
  expect(odd?.metadata).toEqual(plain?.metadata);
  expect(JSON.stringify(odd)).not.toContain('script');
});

describe('host names', () => {
  it('fills the placeholders', () => {
    expect(expandHost('{{name}}.preview.example.com', { number: 3, app: 'weather', name: 'weather-pr-3' })).toBe(
      'weather-pr-3.preview.example.com',
    );
    expect(expandHost('pr-{{number}}-{{app}}.example.com', { number: 3, app: 'weather', name: 'x' })).toBe(
      'pr-3-weather.example.com',
    );
  });

  it('keeps every label at most 63 characters, cut and hash-suffixed, a DNS label still', () => {
    const app = `a${'p'.repeat(62)}`;
    const host = expandHost('{{app}}-pr-{{number}}.example.com', { number: 4242, app, name: 'x' });
    const labels = host?.split('.') ?? [];
    expect(labels[0]?.length).toBeLessThanOrEqual(63);
    expect(labels[0]).toMatch(DNS1123_LABEL);
    expect(labels.slice(1)).toEqual(['example', 'com']);
    expect(hostLabel(`${app}-pr-1`)).not.toBe(hostLabel(`${app}-pr-2`));
  });

  it('gives no host past 253 characters', () => {
    const template = Array.from({ length: 5 }, () => '{{app}}').join('.');
    expect(expandHost(template, { number: 1, app: 'a'.repeat(63), name: 'x' })).toBeUndefined();
  });
});
