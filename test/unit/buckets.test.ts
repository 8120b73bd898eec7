import { describe, expect, it } from 'vitest';
import { Buckets } from '../../src/kube/buckets.ts';

interface Obj {
  ns: string;
  name: string;
  v: number;
}
const obj = (name: string, v = 1): Obj => ({ ns: 'ns', name, v });
const make = () => new Buckets<Obj>((o) => `${o.ns}/${o.name}`);

describe('Buckets', () => {
  it('finds nothing under a value never added', () => {
    expect(make().values('x')).toEqual([]);
  });

  it('keeps one object, then a second beside it, in the order they came', () => {
    const b = make();
    b.add('app', 'ns/a', obj('a'));
    expect(b.values('app')).toEqual([obj('a')]);
    b.add('app', 'ns/b', obj('b'));
    expect(b.values('app')).toEqual([obj('a'), obj('b')]);
    b.add('app', 'ns/c', obj('c'));
    expect(b.values('app').map((o) => o.name)).toEqual(['a', 'b', 'c']);
  });

  it('replaces a lone object added again under its own key, and does not take it for a second', () => {
    const b = make();
    b.add('app', 'ns/a', obj('a', 1));
    b.add('app', 'ns/a', obj('a', 2));
    expect(b.values('app')).toEqual([obj('a', 2)]);
  });

  it('replaces an object among several under its own key', () => {
    const b = make();
    b.add('app', 'ns/a', obj('a', 1));
    b.add('app', 'ns/b', obj('b', 1));
    b.add('app', 'ns/a', obj('a', 2));
    expect(b.values('app')).toEqual([obj('a', 2), obj('b', 1)]);
  });

  it('removes a lone object only under its own key', () => {
    const b = make();
    b.add('app', 'ns/a', obj('a'));
    b.remove('app', 'ns/other');
    expect(b.values('app')).toEqual([obj('a')]);
    b.remove('app', 'ns/a');
    expect(b.values('app')).toEqual([]);
    expect(b.size).toBe(0);
  });

  it('removes one of several, and forgets the value when the last goes', () => {
    const b = make();
    b.add('app', 'ns/a', obj('a'));
    b.add('app', 'ns/b', obj('b'));
    b.remove('app', 'ns/a');
    expect(b.values('app')).toEqual([obj('b')]);
    b.add('app', 'ns/c', obj('c'));
    expect(b.values('app')).toEqual([obj('b'), obj('c')]);
    b.remove('app', 'ns/b');
    b.remove('app', 'ns/c');
    expect(b.values('app')).toEqual([]);
    expect(b.size).toBe(0);
  });

  it('keeps values apart', () => {
    const b = make();
    b.add('one', 'ns/a', obj('a'));
    b.add('two', 'ns/b', obj('b'));
    b.remove('one', 'ns/b');
    expect(b.values('one')).toEqual([obj('a')]);
    expect(b.values('two')).toEqual([obj('b')]);
    expect(b.size).toBe(2);
  });
});
