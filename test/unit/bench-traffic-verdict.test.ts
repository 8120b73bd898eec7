// The traffic bench's rule (bench/traffic-verdict.ts): which answers count as
// failed, and which as answered by a revision that was not supposed to serve.
import { describe, expect, it } from 'vitest';
import { type Sent, type Switch, verdict } from '../../bench/traffic-verdict.ts';

const ok = (sentAt: number, revision: string, answeredAt = sentAt + 5): Sent => ({ sentAt, answeredAt, revision });
const promote: Switch = { measured: true, from: 'a', to: 'b', writtenAt: 100 };

describe('verdict', () => {
  it('a promote: the old revision before the write, either until the path answered the new one, then the new one only', () => {
    const answers = [ok(10, 'a'), ok(120, 'a'), ok(130, 'b', 140), ok(135, 'a'), ok(150, 'b'), ok(160, 'a')];
    const v = verdict(answers, [promote]);
    // 135 was sent before the first answer of b arrived (140): a is still allowed. 160 came after: a is back.
    expect(v.measured).toMatchObject({ requests: 5, failed: 0, wrong: 1, wrongRevisions: { a: 1 } });
    expect(v.setup).toMatchObject({ requests: 1, failed: 0, wrong: 0 });
  });

  it('the new revision answering before the write is wrong (it was only in preview)', () => {
    const v = verdict([ok(10, 'b'), ok(20, 'a')], [promote]);
    expect(v.setup).toMatchObject({ requests: 2, wrong: 1, wrongRevisions: { b: 1 } });
  });

  it('an abort: the stable revision only, before and after the write; the aborted preview never', () => {
    const abort: Switch = { measured: true, from: 'a', to: 'a', writtenAt: 100 };
    const v = verdict([ok(10, 'a'), ok(110, 'b'), ok(120, 'a'), ok(130, 'c')], [abort]);
    expect(v.measured).toMatchObject({ requests: 3, wrong: 2, wrongRevisions: { b: 1, c: 1 } });
  });

  it('an undo after its set-up promote: counted apart, each against its own switch', () => {
    const setup: Switch = { measured: false, from: 'a', to: 'b', writtenAt: 100 };
    const undo: Switch = { measured: true, from: 'b', to: 'a', writtenAt: 200 };
    const answers = [ok(110, 'b'), ok(150, 'b'), ok(210, 'b'), ok(220, 'a', 225), ok(230, 'a'), ok(240, 'b')];
    const v = verdict(answers, [undo, setup]);
    expect(v.setup).toMatchObject({ requests: 2, wrong: 0 });
    expect(v.measured).toMatchObject({ requests: 4, wrong: 1, wrongRevisions: { b: 1 } });
  });

  it('failures are counted with their cause and the revision whose pod took the connection', () => {
    const answers: Sent[] = [
      { sentAt: 110, answeredAt: 112, error: 'ECONNREFUSED', viaRevision: 'a' },
      { sentAt: 120, answeredAt: 2120, error: 'timeout', phase: 'connect' },
      { sentAt: 125, answeredAt: 2125, error: 'timeout', phase: 'response', viaRevision: 'b' },
      { sentAt: 130, answeredAt: 131, error: 'HTTP 503: no registered target' },
      { sentAt: 140, answeredAt: 141, error: 'ECONNRESET', viaRevision: 'b' },
    ];
    expect(verdict(answers, [promote]).measured).toEqual({
      requests: 5,
      failed: 5,
      slow: 1,
      wrong: 0,
      causes: {
        'ECONNREFUSED via the old revision': 1,
        'timeout (connect)': 1,
        'timeout (response) via the new revision': 1,
        'HTTP 503: no registered target': 1,
        'ECONNRESET via the new revision': 1,
      },
      wrongRevisions: {},
      failedAt: { '+0s': 5 },
    });
  });
});
