import { describe, expect, it } from 'vitest';
import { overriding } from '../../core/overriding.ts';

class Counter {
  n = 0;
  private readonly step = 2;
  add(): number {
    this.n += this.step;
    return this.n;
  }
  label(): string {
    return `n=${this.n}`;
  }
}

describe('overriding', () => {
  it('the named members are replaced; the others are the target\'s, bound to it (private fields work)', () => {
    const c = new Counter();
    const o = overriding(c, { label: () => 'replaced' });
    expect(o.label()).toBe('replaced');
    const add = o.add;
    expect(add()).toBe(2);
    expect(o.add()).toBe(4);
    expect(o.n).toBe(4);
    expect(c.n).toBe(4);
  });

  it('an override may call the target\'s own member', () => {
    const c = new Counter();
    const o = overriding(c, { add: () => c.add() * 10 });
    expect(o.add()).toBe(20);
    expect(c.n).toBe(2);
  });
});
