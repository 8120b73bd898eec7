import { describe, expect, it } from 'vitest';
import { selectJsonPath } from '../../src/analysis/jsonpath.ts';
import { JSON_PATH_PATTERN } from '../../src/app/patterns.ts';

describe('web.jsonPath: the part of the answer the conditions see as result', () => {
  const answer = { data: { ok: true, 'p-99': 120, 'with space': 1 }, items: [{ value: 3 }, { value: 4 }] };

  it.each<[string, unknown]>([
    ['{$}', answer],
    ['$', answer],
    ['{$.data.ok}', true],
    ['{.data.ok}', true],
    ['$.data.p-99', 120],
    ["{$.data['with space']}", 1],
    ['{$.items[1].value}', 4],
    ['{$["items"][0]}', { value: 3 }],
  ])('%s selects its value', (path, value) => {
    expect(selectJsonPath(answer, path)).toEqual({ ok: true, value });
  });

  it('names the step that found nothing', () => {
    expect(selectJsonPath(answer, '{$.data.missing.deeper}')).toEqual({
      ok: false,
      error: 'no value at $.data.missing in the answer (jsonPath {$.data.missing.deeper})',
    });
    expect(selectJsonPath(answer, '{$.items[5]}')).toMatchObject({ ok: false });
    expect(selectJsonPath('plain text', '{$.data}')).toMatchObject({ ok: false });
  });

  it('does not reach into inherited properties', () => {
    expect(selectJsonPath({}, '{$.constructor}')).toMatchObject({ ok: false });
  });

  it.each(['', '{}', '{$.items[*]}', '{$.items[?(@.value > 3)]}', '{$..value}', 'data.ok', '{$.data'])(
    'refuses %j',
    (path) => {
      expect(JSON_PATH_PATTERN.test(path)).toBe(false);
      expect(selectJsonPath(answer, path)).toMatchObject({ ok: false });
    },
  );
});
