import { describe, expect, it } from 'vitest';
import { rangeCapacity, UnitBudget, UnitLimitError } from './unit-budget.js';

/** The bound a step is refused by, or undefined when it is let through. */
function refusedBy(step: () => unknown): string | undefined {
  try {
    step();
    return undefined;
  } catch (error) {
    if (error instanceof UnitLimitError) return error.limit;
    throw error;
  }
}

describe('the unit budget of a node', () => {
  it('bounds units per page and per app; a released unit makes room again, once', () => {
    const budget = new UnitBudget({ unitsPerPage: 2, unitsPerApp: 3 }, undefined);
    const p1a = budget.unit('app', 'p1');
    budget.unit('app', 'p1');
    expect(refusedBy(() => budget.unit('app', 'p1'))).toBe('unitsPerPage');
    budget.unit('app', 'p2');
    expect(refusedBy(() => budget.unit('app', 'p3'))).toBe('unitsPerApp');
    // Another app is counted apart.
    expect(refusedBy(() => budget.unit('other', 'p4'))).toBeUndefined();
    p1a();
    p1a();
    expect(budget.held('app')).toBe(2);
    expect(refusedBy(() => budget.unit('app', 'p1'))).toBeUndefined();
    expect(refusedBy(() => budget.unit('app', 'p3'))).toBe('unitsPerApp');
  });

  it('without a port range there is no share: sessions are bounded by the units only', () => {
    const budget = new UnitBudget({ unitsPerPage: 4, unitsPerApp: 100 }, undefined);
    for (let i = 0; i < 1000; i++) budget.session('app');
    expect(budget.held()).toBe(1000);
  });

  it('when a quarter of the range or less is free, an app at its share is refused and a newcomer is not', () => {
    const budget = new UnitBudget({ unitsPerPage: 100, unitsPerApp: 100 }, 16);
    for (let i = 0; i < 12; i++) budget.session('flood');
    // 4 of 16 free: short. Alone, the app's share is 16 / 2 (itself and one yet to come).
    expect(refusedBy(() => budget.session('flood'))).toBe('fairShare');
    expect(refusedBy(() => budget.unit('flood', 'p'))).toBe('fairShare');
    // A second app: its share is 16 / 3 = 5.
    const other = [0, 1, 2, 3].map(() => budget.session('other'));
    expect(budget.held()).toBe(16);
    // The range is full now: the newcomer's fifth is let through by the budget (werift then finds no port).
    expect(refusedBy(() => budget.session('other'))).toBeUndefined();
    for (const release of other) release();
    budget.session('other');
    // A third app coming: the flood's share is 16 / 4.
    expect(refusedBy(() => budget.session('third'))).toBeUndefined();
    expect(refusedBy(() => budget.session('flood'))).toBe('fairShare');
  });

  it('with no other app that could come (no reserve), an app alone may use the whole range', () => {
    const budget = new UnitBudget({ unitsPerPage: 100, unitsPerApp: 100 }, 16);
    for (let i = 0; i < 16; i++) expect(refusedBy(() => budget.session('one', false))).toBeUndefined();
    expect(refusedBy(() => budget.unit('one', 'p', false))).toBeUndefined(); // werift then finds no port
    expect(budget.held('one')).toBe(17);
  });

  it('without a reserve, apps holding sessions still share a short range among themselves', () => {
    const budget = new UnitBudget({ unitsPerPage: 100, unitsPerApp: 100 }, 16);
    budget.session('other', false);
    for (let i = 0; i < 8; i++) expect(refusedBy(() => budget.session('one', false))).toBeUndefined();
    // 7 of 16 free: not short yet, so the 9th and more go until a quarter is left.
    for (let i = 0; i < 3; i++) expect(refusedBy(() => budget.session('one', false))).toBeUndefined();
    // 4 free: short. Two apps hold sessions: 'one' holds 11, past its share of 16 / 2.
    expect(refusedBy(() => budget.session('one', false))).toBe('fairShare');
    expect(refusedBy(() => budget.session('other', false))).toBeUndefined();
  });

  it('above a quarter free, any app may take more', () => {
    const budget = new UnitBudget({ unitsPerPage: 100, unitsPerApp: 100 }, 16);
    for (let i = 0; i < 11; i++) expect(refusedBy(() => budget.session('one'))).toBeUndefined();
    expect(refusedBy(() => budget.session('one'))).toBeUndefined(); // 5 free before: the 12th goes
    expect(refusedBy(() => budget.session('one'))).toBe('fairShare');
  });

  it('a range holds one session per media address in it', () => {
    expect(rangeCapacity([40000, 40015], 1)).toBe(16);
    expect(rangeCapacity([40000, 40015], 2)).toBe(8);
    expect(rangeCapacity(undefined, 1)).toBeUndefined();
  });
});
