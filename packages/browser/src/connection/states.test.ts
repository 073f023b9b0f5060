import { describe, expect, it } from 'vitest';
import { type ConnectionInput, type ConnectionState, TRANSITIONS, transition } from './states.js';

const STATES: ConnectionState[] = ['connecting', 'connected', 'reconnecting', 'closed'];
const INPUTS: ConnectionInput[] = ['welcome', 'lost', 'stop'];

describe('connection state table', () => {
  it('has exactly these transitions', () => {
    const all = STATES.flatMap((state) =>
      INPUTS.map((input) => `${state} ${input} → ${transition(state, input) ?? '-'}`),
    );
    expect(all).toEqual([
      'connecting welcome → connected',
      'connecting lost → reconnecting',
      'connecting stop → closed',
      'connected welcome → -',
      'connected lost → reconnecting',
      'connected stop → closed',
      'reconnecting welcome → connected',
      'reconnecting lost → reconnecting',
      'reconnecting stop → closed',
      'closed welcome → -',
      'closed lost → -',
      'closed stop → -',
    ]);
  });

  it('makes closed final and reachable from every other state', () => {
    expect(Object.keys(TRANSITIONS.closed)).toEqual([]);
    for (const state of STATES.filter((s) => s !== 'closed')) expect(transition(state, 'stop')).toBe('closed');
  });
});
