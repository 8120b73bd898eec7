// The CLI's reading of an action's flags (src/cli/args.ts): a revision flag
// takes what the API body and the intent take, a safe integer from 1 up, and
// refuses anything else as a usage error naming the flag, before any request.
import { describe, expect, it } from 'vitest';
import { parse } from '../../src/cli/args.ts';
import { UsageError } from '../../src/cli/errors.ts';

describe('a revision flag', () => {
  it('takes a revision number', () => {
    expect(parse(['promote', 'web', '--revision', '9007199254740991'])).toMatchObject({
      kind: 'run',
      flags: { revision: 9007199254740991 },
    });
  });

  it.each([
    ['promote', '--revision'],
    ['undo', '--to-revision'],
  ])('%s %s refuses a number beyond what the intent can hold, naming the flag', (action, flag) => {
    for (const value of ['9007199254740993', '99999999999999999999']) {
      expect(() => parse([action, 'web', flag, value])).toThrow(UsageError);
      expect(() => parse([action, 'web', flag, value])).toThrow(`${flag} must be a revision number (1, 2, ...)`);
    }
  });
});
