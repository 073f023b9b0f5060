import { describe, expect, it } from 'vitest';
import { hashDashboardPassword, parsePasswordHash, passwordMatches } from './password-hash.js';

describe('the dashboard password hash', () => {
  it('matches its own password only, with a new salt each time', async () => {
    const text = await hashDashboardPassword('correct horse');
    expect(text).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    const hash = parsePasswordHash(text);
    expect(await passwordMatches(hash, 'correct horse')).toBe(true);
    expect(await passwordMatches(hash, 'correct horsE')).toBe(false);
    expect(await passwordMatches(hash, '')).toBe(false);
    expect(await hashDashboardPassword('correct horse')).not.toBe(text);
  });

  it('refuses what is not a hash of that form, or a cost that would stall every sign-in', async () => {
    const good = await hashDashboardPassword('x');
    const [, , , , salt, key] = good.split('$');
    for (const text of [
      '',
      'correct horse',
      good.replace('scrypt', 'bcrypt'),
      `scrypt$16384$8$1$${salt}`,
      `scrypt$16385$8$1$${salt}$${key}`,
      `scrypt$2097152$8$1$${salt}$${key}`,
      `scrypt$16384$0$1$${salt}$${key}`,
      `scrypt$16384$8$1$${salt}$${key}x`,
    ]) {
      expect(() => parsePasswordHash(text)).toThrow(
        'the dashboard password hash must be scrypt$N$r$p$<salt>$<hash>, as `realtime dashboard-password` prints it',
      );
    }
    // Spaces around a pasted hash do not matter.
    expect(parsePasswordHash(` ${good}\n`).text).toBe(good);
  });
});
