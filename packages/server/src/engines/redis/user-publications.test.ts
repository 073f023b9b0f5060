import { describe, expect, it } from 'vitest';
import type { Outgoing, Publication } from '../types.js';
import { decodePublication, encodePublication } from './publication-codec.js';

function roundTrip(event: Outgoing): Publication | undefined {
  const { head, tail, body } = encodePublication(event);
  return decodePublication(`${head}${tail}\n${body}`);
}

// The closes and revocations of POST /users/{id}/disconnect and POST /tokens/revoke between nodes.
describe('publication codec: user closes and token revocations', () => {
  it('carries a user close with its code, the reason as the body', () => {
    const close: Outgoing = { kind: 'user.close', app: 'a', user: 'ann\n"x"', code: 4004, reason: 'bye; now' };
    expect(encodePublication(close).head).toBe('["c","a","ann\\n\\"x\\"",4004]');
    expect(roundTrip(close)).toEqual(close);
  });

  it('carries a revocation of the whole app and of one user', () => {
    const whole: Outgoing = {
      kind: 'broadcast',
      message: { type: 'tokens.revoked', app: 'a', before: 1_800_000_000_000 },
    };
    const one: Outgoing = {
      kind: 'broadcast',
      message: { type: 'tokens.revoked', app: 'a', user: 'b{c}', before: 5 },
    };
    expect(roundTrip(whole)).toEqual(whole);
    expect(roundTrip(one)).toEqual(one);
  });

  it('reads nothing from a malformed one', () => {
    expect(decodePublication('["c","a","u","4004"]\nx')).toBeUndefined();
    expect(decodePublication('["b","t","a"]\n')).toBeUndefined();
  });
});
