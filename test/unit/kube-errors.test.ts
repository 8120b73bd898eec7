// How Teal reads a failed request: the API server's Status, whichever way
// client-node hands it over, and the one-line message logs and status show.
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { apiStatusOf, errorMessage, ignoreNotFound, isTerminal } from '../../src/kube/errors.ts';

const status = (code: number, body: object) =>
  new ApiException(code, 'refused', JSON.stringify({ kind: 'Status', code, ...body }), {});

// client-node's Watch fails with a plain Error that carries only the HTTP status.
const watchError = (code: number, text: string) => Object.assign(new Error(text), { statusCode: code });

describe('apiStatusOf', () => {
  it('reads the Status of a typed client’s refusal, JSON text or object', () => {
    const gone = status(404, {
      reason: 'NotFound',
      message: 'apps.teal.dev "web" not found',
      details: { name: 'web' },
    });
    expect(apiStatusOf(gone)).toEqual({
      code: 404,
      reason: 'NotFound',
      message: 'apps.teal.dev "web" not found',
      details: { name: 'web' },
    });
    expect(apiStatusOf(new ApiException(409, 'x', { message: 'changed' }, {}))).toEqual({
      code: 409,
      message: 'changed',
    });
  });

  it('keeps a body that is not JSON as the message, cut short', () => {
    const proxy = new ApiException(502, 'x', `<html>${'x'.repeat(1000)}</html>`, {});
    expect(apiStatusOf(proxy)?.message).toHaveLength(300);
  });

  it('reads the HTTP status of a watch that was refused', () => {
    expect(apiStatusOf(watchError(403, 'Forbidden'))).toEqual({ code: 403, message: 'Forbidden' });
    expect(isTerminal(watchError(403, 'Forbidden'))).toBe(true);
  });

  it('is undefined when the API server did not answer', () => {
    expect(apiStatusOf(new TypeError('fetch failed'))).toBeUndefined();
    expect(apiStatusOf('nope')).toBeUndefined();
  });
});

describe('ignoreNotFound', () => {
  it('gives undefined for a 404 and passes every other failure on', async () => {
    await expect(ignoreNotFound(Promise.reject(status(404, {})))).resolves.toBeUndefined();
    await expect(ignoreNotFound(Promise.resolve('here'))).resolves.toBe('here');
    const forbidden = status(403, { message: 'no' });
    await expect(ignoreNotFound(Promise.reject(forbidden))).rejects.toBe(forbidden);
  });
});

describe('errorMessage', () => {
  it('says the code and the Status message rather than the whole response', () => {
    expect(errorMessage(status(422, { message: 'spec.replicas: Invalid value' }))).toBe(
      '422: spec.replicas: Invalid value',
    );
    expect(errorMessage(new ApiException(500, 'x', undefined, {}))).toBe('HTTP 500');
    expect(errorMessage(new Error('socket hang up'))).toBe('socket hang up');
  });
});
