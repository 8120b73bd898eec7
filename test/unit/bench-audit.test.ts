// The bench's request counting (bench/audit.ts, bench/audit-log.ts): which
// audit events count a request, whose it is, and how the log is read by windows.
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AuditEvent,
  addEvent,
  auditTime,
  type Counts,
  counted,
  DRIVER_USER,
  isArgoRequest,
  isTealRequest,
  parseAuditLine,
  requestKey,
  summarize,
} from '../../bench/audit.ts';
import { AuditLog } from '../../bench/audit-log.ts';

const event = (over: Partial<AuditEvent>): AuditEvent => ({
  auditID: 'a',
  stage: 'ResponseComplete',
  verb: 'get',
  userAgent: 'kubernetes-client-javascript/2.0.1',
  objectRef: { resource: 'services', namespace: 'ns' },
  ...over,
});

describe('counted', () => {
  it('counts a watch when it opens, and not again when it ends', () => {
    expect(counted(event({ verb: 'watch', stage: 'ResponseStarted' }))).toBe(true);
    expect(counted(event({ verb: 'watch', stage: 'ResponseComplete' }))).toBe(false);
  });

  it('counts any other request when complete, and a panic', () => {
    expect(counted(event({ verb: 'patch' }))).toBe(true);
    expect(counted(event({ verb: 'patch', stage: 'ResponseStarted' }))).toBe(false);
    expect(counted(event({ verb: 'get', stage: 'Panic' }))).toBe(true);
  });
});

describe('whose request', () => {
  it("tells Teal's requests from the bench's own, which impersonate", () => {
    expect(isTealRequest(event({}))).toBe(true);
    expect(isTealRequest(event({ userAgent: 'undici' }))).toBe(true);
    expect(isTealRequest(event({ impersonatedUser: { username: DRIVER_USER } }))).toBe(false);
    expect(isTealRequest(event({ userAgent: 'kube-controller-manager/v1.36.3 (linux/amd64)' }))).toBe(false);
  });

  it("knows Argo's by client-go's user agent", () => {
    expect(isArgoRequest(event({ userAgent: 'rollouts-controller/v0.0.0 (linux/amd64) kubernetes/$Format' }))).toBe(
      true,
    );
    expect(isArgoRequest(event({}))).toBe(false);
  });
});

describe('counts', () => {
  it('keys by verb and resource, with the subresource, and sums by verb', () => {
    const counts: Counts = {};
    addEvent(counts, event({ verb: 'update', objectRef: { resource: 'apps', subresource: 'status' } }));
    addEvent(counts, event({ verb: 'update', objectRef: { resource: 'apps', subresource: 'status' } }));
    addEvent(counts, event({ verb: 'get' }));
    addEvent(counts, event({ verb: 'get', objectRef: undefined }));
    expect(counts).toEqual({ 'update apps/status': 2, 'get services': 1, get: 1 });
    expect(requestKey(event({ verb: 'list', objectRef: { resource: 'pods' } }))).toBe('list pods');
    expect(summarize(counts)).toEqual({ total: 4, writes: 2, byVerb: { update: 2, get: 2 } });
  });

  it("reads the API server's timestamps, microseconds included", () => {
    expect(auditTime(event({ requestReceivedTimestamp: '2026-11-23T05:40:00.123456Z' }))).toBe(
      Date.UTC(2026, 10, 23, 5, 40, 0, 123),
    );
    expect(auditTime(event({}))).toBeUndefined();
  });

  it('skips a line that is not an event', () => {
    expect(parseAuditLine('{"auditID":"x"')).toBeUndefined();
    expect(parseAuditLine('I1123 some log line')).toBeUndefined();
    expect(parseAuditLine(JSON.stringify(event({ verb: 'list' })))?.verb).toBe('list');
  });
});

describe('AuditLog', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads whole lines by window: a line still being written belongs to the next', () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-audit-'));
    const path = join(dir, 'audit.log');
    const line = (id: string) => JSON.stringify(event({ auditID: id, objectRef: { resource: 'pods', name: 'é' } }));
    writeFileSync(path, '');
    const log = new AuditLog(path);
    const start = log.mark();
    const second = line('2');
    writeFileSync(path, `${line('1')}\n${second.slice(0, 20)}`);
    const middle = log.mark();
    const ids = (from: number, to: number) => {
      const seen: string[] = [];
      log.scan(from, to, (e) => seen.push(e.auditID));
      return seen;
    };
    expect(ids(start, middle)).toEqual(['1']);
    appendFileSync(path, `${second.slice(20)}\n${line('3')}\n`);
    expect(ids(middle, log.mark())).toEqual(['2', '3']);
  });
});
