// successCondition and failureCondition (src/analysis/condition.ts): CEL over
// `result`, judged with Argo Rollouts' rules.
//
// From Argo Rollouts' expr to CEL, for docs/analysis.md (the table below runs each):
//   len(result) > 0                    size(result) > 0
//   all(result.values, {# > 1})        result.values.all(v, v > 1)
//   any(result, {# > 0.5})             result.exists(v, v > 0.5)
//   len(filter(result, {# > 0.5}))     result.filter(v, v > 0.5).size()
//   asInt(result) / asFloat(result)    int(result) / double(result)
//   isNil(result)                      result == null
//   default(result, 0) < 10            (result == null ? 0.0 : result) < 10.0
//   a and b / a or b / not a           a && b / a || b / !a
//   result.missing ?? 0 (absent field) result.?missing.orValue(0.0), or has(result.missing)
//   isNaN(result), isInf(result), result[0], result.status == "ok", 2 in result: the same.
// Numbers from JSON and Prometheus are doubles. Comparisons mix int and double
// freely (result > 1); arithmetic does not, as everywhere in CEL: result[0] * 100.0.
// Not offered (each would let a condition stall or crash the operator): matches,
// split, map, cel.bind; and `x + x` with an iteration variable twice.
import { describe, expect, it } from 'vitest';
import {
  CONDITION_FUNCTIONS,
  checkCondition,
  EVALUATION_TIMEOUT_MS,
  evaluateCondition,
  judge,
  MAX_EXPRESSION_LENGTH,
  MAX_RESULT_DEPTH,
  MAX_RESULT_TEXT,
  MAX_RESULT_VALUES,
  show,
} from '../../src/analysis/condition.ts';

const value = (expression: string, result: unknown) => {
  const outcome = evaluateCondition(expression, result);
  if (!outcome.ok) throw new Error(`${expression}: ${outcome.error}`);
  return outcome.value;
};
const error = (expression: string, result: unknown) => {
  const outcome = evaluateCondition(expression, result);
  if (outcome.ok) throw new Error(`${expression} gave ${outcome.value}, not an error`);
  return outcome.error;
};

/** A value nested `levels` deep, built without recursion. */
function nested(levels: number): unknown {
  let inner: unknown = 1;
  for (let i = 0; i < levels; i++) inner = [inner];
  return inner;
}

describe('Argo Rollouts conditions, written in CEL', () => {
  const apdex = { service_apdex: { label: null, values: { values: [2, 2] } } };
  it.each([
    ['result == true', 'result == true', true, true],
    ['result[0] >= 0.95', 'result[0] >= 0.95', [0.97], true],
    ['result[0] >= 0.95', 'result[0] >= 0.95', [0.9], false],
    ['result > 1', 'result > 1', 5, true],
    ['result.status == "ok"', 'result.status == "ok"', { status: 'ok' }, true],
    ['len(result) > 0', 'size(result) > 0', [], false],
    ['len(result) == 0 || result[0] < 0.01', 'size(result) == 0 || result[0] < 0.01', [], true],
    [
      'all(result.service_apdex.values.values, {# > 1})',
      'result.service_apdex.values.values.all(v, v > 1)',
      apdex,
      true,
    ],
    ['any(result, {# > 0.5})', 'result.exists(v, v > 0.5)', [0.1, 0.6], true],
    ['len(filter(result, {# > 0.5})) >= 2', 'result.filter(v, v > 0.5).size() >= 2', [0.6, 0.1], false],
    ['2 in result', '2 in result', [2, 3], true],
    ['asInt(result) == 1', 'int(result) == 1', '1', true],
    ['asFloat(result) >= 1.1', 'double(result) >= 1.1', '1.1', true],
    ['isNil(result)', 'result == null', undefined, true],
    ['default(result, 0) < 10', '(result == null ? 0.0 : result) < 10.0', null, true],
    ['isNaN(result) || result >= 0.95', 'isNaN(result) || result >= 0.95', Number.NaN, true],
    ['isInf(result)', 'isInf(result)', Number.NEGATIVE_INFINITY, true],
    ['result.errors == 0 and result.ok', 'result.errors == 0 && result.ok', { errors: 0, ok: true }, true],
    ['not (result.status == "down")', '!(result.status == "down")', { status: 'up' }, true],
    ['result[0] * 100 < 5', 'result[0] * 100.0 < 5.0', [0.01], true],
    ['result.a + result.b > 1', 'result.a + result.b > 1', { a: 1, b: 0.5 }, true],
    ['(absent field, default 0)', 'result.?count.orValue(0.0) < 5.0', {}, true],
    ['(absent field)', 'has(result.ready) && result.ready', {}, false],
    ['(a string)', 'result.version.startsWith("v2")', { version: 'v2.1.0' }, true],
    ['(every series)', 'result.all(s, s.value < 0.05 && !isNaN(s.value))', [{ value: 0.01 }, { value: 0.02 }], true],
  ])('%s → %s', (_argo, cel, result, expected) => {
    expect(checkCondition(cel)).toBeUndefined();
    expect(value(cel, result)).toBe(expected);
  });

  it('mixing int and double in arithmetic is an error, as everywhere in CEL', () => {
    expect(error('result[0] * 100 < 5', [0.01])).toMatch(/no such overload/);
  });

  it('offers the documented helpers', () => {
    expect(CONDITION_FUNCTIONS).toEqual(expect.arrayContaining(['size', 'all', 'exists', 'filter', 'isNaN', 'isInf']));
  });
});

describe('checkCondition: refused at validation, before anything runs', () => {
  it.each([
    ['result[0] >= 0.95', undefined],
    ['result.items.exists(i, i.name == "db" && i.healthy)', undefined],
    ['1 +', /is not valid CEL: Unexpected token/],
    ['foo == 1', /is not valid CEL: Unknown variable: foo/],
    ['frobnicate(result)', /is not valid CEL/],
    ['isNaN("x")', /is not valid CEL: found no matching overload/],
    ['size(result)', /gives int, not true or false/],
    ['"text"', /gives string, not true or false/],
    ['x'.repeat(MAX_EXPRESSION_LENGTH + 1), new RegExp(`longer than ${MAX_EXPRESSION_LENGTH} characters`)],
    [Array.from({ length: 68 }, () => 'result == 1').join(' || '), /Exceeded maxAstNodes/],
    [`${'('.repeat(40)}result${')'.repeat(40)} == 1`, /Exceeded maxDepth/],
    ['result.constructor.constructor("return process")()', /is not valid CEL/],
    ['result.name.matches("(a+)+$")', /calls matches\(\), which conditions do not offer: JavaScript regular/],
    ['result.s.split(",").size() > 1', /calls split\(\)/],
    ['result.map(x, x * 2.0).all(x, x > 1.0)', /calls map\(\)/],
    ['cel.bind(a, result, a == a)', /calls bind\(\)/],
    ['b"abc".json() == result', /calls json\(\)/],
    ['result.all(x, x + x > 1.0)', /uses "x" twice in one "\+"/],
    ['[result.s].exists(a, [a + a].exists(b, size(b) > 0))', /uses "a" twice/],
  ])('%s', (expression, problem) => {
    const found = checkCondition(expression);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toMatch(problem);
  });

  it('a "+" may use an iteration variable once, and the same name bound inside it does not count', () => {
    expect(checkCondition('result.all(x, [x].all(y, x + y > 1.0))')).toBeUndefined();
    expect(checkCondition('result.all(x, x + size([1].filter(x, x > 0 && x < 2)) > 1.0)')).toBeUndefined();
    expect(checkCondition('result.s + result.s == "aa"')).toBeUndefined();
  });
});

describe('evaluateCondition against hostile conditions and results', () => {
  it('reads own fields only: no prototype, no constructor', () => {
    for (const field of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(error(`result.${field} == null`, {})).toBe(`No such key: ${field}`);
      expect(error(`result["${field}"] == null`, {})).toBe(`No such key: ${field}`);
    }
  });

  it('a "__proto__" key in the JSON is an ordinary field, and pollutes nothing', () => {
    const result: unknown = JSON.parse('{"__proto__": {"polluted": true}}');
    expect(value('result.__proto__.polluted', result)).toBe(true);
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
  });

  it('a condition that would run for long ends at the deadline, and its measurement is Failed, not an Error', () => {
    const numbers = Array.from({ length: 9000 }, (_, i) => i * 1.0);
    const slow = 'result.all(a, result.all(b, a + b >= 0.0))';
    expect(error(slow, numbers)).toBe(`the condition took longer than ${EVALUATION_TIMEOUT_MS} ms`);
    // Failed, as a retry would spend the same time to learn the same (an Error is retried every 10 s).
    const judged = judge(numbers, 'result.size() > 0', slow);
    expect(judged.phase).toBe('Failed');
    expect(judged.message).toMatch(
      new RegExp(
        `^failureCondition ".+" took longer than ${EVALUATION_TIMEOUT_MS} ms, so the measurement is Failed; result \\[0,1,2,`,
      ),
    );
    expect(value('result.all(a, a >= 0.0)', numbers)).toBe(true);
  });

  it('a refused condition is an error at evaluation too, and never an exception', () => {
    expect(error('"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!".matches("(a+)+$")', null)).toMatch(/calls matches\(\)/);
    expect(error('1 +', null)).toMatch(/^the condition is not valid CEL/);
  });

  it.each([
    ['a huge array', Array.from({ length: 1_000_000 }, () => 1), `more than ${MAX_RESULT_VALUES} values`],
    ['many keys', Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i])), 'more than'],
    ['a long string', 'x'.repeat(MAX_RESULT_TEXT + 1), `more than ${MAX_RESULT_TEXT} characters`],
    ['long keys', { ['k'.repeat(MAX_RESULT_TEXT + 1)]: 1 }, 'characters of text'],
    ['deep nesting', nested(MAX_RESULT_DEPTH + 1), `deeper than ${MAX_RESULT_DEPTH} levels`],
    ['very deep nesting', nested(1_000_000), 'deeper than'],
    ['a function', { f: () => 1 }, 'a function, which is not JSON'],
    ['a Date', new Date(0), 'which is not JSON'],
    ['a bigint', [1n], 'an int, which is not JSON'],
    ['undefined inside', [undefined], 'which is not JSON'],
  ])('refuses a result with %s', (_what, result, problem) => {
    expect(error('result != null', result)).toContain(problem);
  });

  it('takes results up to the bounds', () => {
    expect(value('size(result) > 0', nested(MAX_RESULT_DEPTH))).toBe(true);
    expect(
      value(
        'size(result) > 0',
        Array.from({ length: MAX_RESULT_VALUES - 1 }, () => 1),
      ),
    ).toBe(true);
  });

  it('anything but true or false is an error', () => {
    expect(error('result', 1)).toBe('the condition gave a double 1, not true or false');
    expect(error('result.status', { status: 'ok' })).toBe('the condition gave a string "ok", not true or false');
    expect(error('result', null)).toBe('the condition gave null, not true or false');
    expect(error('result', [1])).toBe('the condition gave a list [1], not true or false');
  });

  it('NaN compares false, Infinity compares as a number', () => {
    expect(value('result >= 0.95', Number.NaN)).toBe(false);
    expect(value('result < 0.95', Number.NaN)).toBe(false);
    expect(value('isNaN(result[0])', [Number.NaN])).toBe(true);
    expect(value('result > 1000000.0 && isInf(result)', Number.POSITIVE_INFINITY)).toBe(true);
  });

  it('a missing field or index is an error naming it; has() and .? test for it', () => {
    expect(error('result.missing == 1', {})).toBe('No such key: missing');
    expect(error('result[0] > 1', [])).toMatch(/index out of bounds/);
    expect(value('has(result.missing)', {})).toBe(false);
    expect(value('result.?a.?b.orValue(7.0) == 7.0', { a: {} })).toBe(true);
  });
});

describe('judge: Argo Rollouts rules', () => {
  const T = 'result == 1';
  const F = 'result == 2';
  it.each([
    ['neither set', undefined, undefined, 'Successful'],
    ['neither set (empty strings)', '', '', 'Successful'],
    ['only success, true', T, undefined, 'Successful'],
    ['only success, false', F, undefined, 'Failed'],
    ['only success, failure empty', F, '', 'Failed'],
    ['only failure, true', undefined, T, 'Failed'],
    ['only failure, false', undefined, F, 'Successful'],
    ['both true: failure wins', T, T, 'Failed'],
    ['success true, failure false', T, F, 'Successful'],
    ['success false, failure true', F, T, 'Failed'],
    ['both false', F, F, 'Inconclusive'],
    ['success errs', 'result.x == 1', T, 'Error'],
    ['failure errs', T, 'result.x == 1', 'Error'],
    ['success refused', 'result.s.split(",") == []', undefined, 'Error'],
  ])('%s', (_case, success, failure, phase) => {
    expect(judge(1, success, failure).phase).toBe(phase);
  });

  it('says which condition decided and on what value', () => {
    expect(judge([0.5], 'result[0] >= 0.95').message).toBe(
      'successCondition "result[0] >= 0.95" is false for result [0.5]',
    );
    expect(judge([0.5], 'result[0] >= 0.95', 'result[0] < 0.6').message).toBe(
      'failureCondition "result[0] < 0.6" is true for result [0.5]',
    );
    expect(judge([0.5], undefined, 'result[0] < 0.1').message).toBe(
      'failureCondition "result[0] < 0.1" is false for result [0.5]',
    );
    expect(judge([0.5], 'result[0] > 0.9', 'result[0] < 0.1').message).toBe(
      'neither successCondition "result[0] > 0.9" nor failureCondition "result[0] < 0.1" is true for result [0.5]',
    );
    expect(judge(Number.NaN, 'result >= 0.95').message).toBe(
      'successCondition "result >= 0.95" is false for result NaN',
    );
    expect(judge({ ok: true }).message).toBe('no condition is set: every result passes ({"ok":true})');
  });

  it('an error names the condition, the cause and the value; an empty result says so', () => {
    expect(judge({ a: 1 }, 'result.b == 1').message).toBe(
      'could not evaluate successCondition "result.b == 1": No such key: b; result {"a":1}',
    );
    expect(judge([], undefined, 'result[0] > 0.1').message).toMatch(
      /^could not evaluate failureCondition "result\[0\] > 0\.1": the result is empty, the provider returned no data \(.+\); result \[\]$/,
    );
    expect(judge(undefined, 'result > 1').message).toMatch(/the result is empty.*; result null$/);
  });

  it('keeps its message bounded whatever the value and the condition', () => {
    const long = `result.name == "${'n'.repeat(900)}"`;
    const { phase, message } = judge({ name: 'x'.repeat(50_000), other: [1, 2, 3] }, long);
    expect(phase).toBe('Failed');
    expect(message.length).toBeLessThan(400);
    expect(message).toMatch(/^successCondition "result\.name == \\"n+…" is false for result \{"name":"x+…$/);
  });
});

describe('show', () => {
  it('spells out what JSON cannot, and cuts long values', () => {
    expect(show({ a: [1, Number.NaN, Number.POSITIVE_INFINITY, null, 's', { b: true }] })).toBe(
      '{"a":[1,NaN,Infinity,null,"s",{"b":true}]}',
    );
    expect(show(undefined)).toBe('null');
    expect(show(Array.from({ length: 1_000_000 }, () => 1)).length).toBe(128);
    expect(show(nested(1_000_000))).toMatch(/^\[{9}…\]{9}$/);
  });
});
