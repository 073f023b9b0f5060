import { describe, expect, it } from 'vitest';
import { parseAppEntry } from './config-file.js';
import { UsageError } from './usage-error.js';

const base = { key: 'shop', secret: 'the-new-secret-0123456789' };
const parse = (extra: Record<string, unknown>) => parseAppEntry({ ...base, ...extra }, 'apps[0]', false);
const refusal = (extra: Record<string, unknown>): string => {
  try {
    parse(extra);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('taken');
};

describe('a rotation written in a config file app', () => {
  it('reads oldSecret, oldSecretRetiresAt and webhooksSignedBy (default new)', () => {
    expect(parse({}).rotation).toBeUndefined();
    expect(
      parse({ oldSecret: 'the-old-secret-0123456789', oldSecretRetiresAt: '2026-12-01T09:00:00Z' }).rotation,
    ).toEqual({
      oldSecret: 'the-old-secret-0123456789',
      retiresAt: Date.UTC(2026, 11, 1, 9),
      signer: 'new',
    });
    expect(
      parse({
        oldSecret: 'the-old-secret-0123456789',
        oldSecretRetiresAt: '2026-12-01T10:00:00+01:00',
        webhooksSignedBy: 'old',
      }).rotation,
    ).toEqual({ oldSecret: 'the-old-secret-0123456789', retiresAt: Date.UTC(2026, 11, 1, 9), signer: 'old' });
  });

  it('refuses a rotation it cannot read, naming the field', () => {
    const at = '2026-12-01T09:00:00Z';
    expect(refusal({ oldSecretRetiresAt: at })).toBe('apps[0].oldSecret must be a string of at least 16 characters');
    expect(refusal({ oldSecret: 'short', oldSecretRetiresAt: at })).toContain('apps[0].oldSecret');
    expect(refusal({ oldSecret: base.secret, oldSecretRetiresAt: at })).toBe(
      'apps[0].oldSecret is the same as apps[0].secret',
    );
    for (const when of [undefined, 1_800_000_000_000, '2026-12-01T09:00:00', 'tomorrow', '2026-13-01T09:00:00Z']) {
      expect(refusal({ oldSecret: 'the-old-secret-0123456789', oldSecretRetiresAt: when })).toContain(
        'apps[0].oldSecretRetiresAt must be',
      );
    }
    expect(refusal({ oldSecret: 'the-old-secret-0123456789', oldSecretRetiresAt: at, webhooksSignedBy: 'both' })).toBe(
      'apps[0].webhooksSignedBy must be "new" or "old"',
    );
  });
});
