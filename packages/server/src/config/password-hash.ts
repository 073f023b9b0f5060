/**
 * The dashboard's operator password, kept as an scrypt hash only: `scrypt$N$r$p$<salt>$<hash>`
 * (salt and hash base64url). Checking takes the same path whatever the password given.
 * It lives in config/ because the hash is a config value (the CLI makes it, config parses it, the
 * dashboard checks it), so config need not import the dashboard.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** scrypt's cost: about 50 ms and 16 MB per check here, which is what a guess costs too. */
const COST = { N: 16_384, r: 8, p: 1 } as const;
const FORM = /^scrypt\$(\d{1,7})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9_-]{16,})\$([A-Za-z0-9_-]{43})$/;

export interface PasswordHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
  /** As configured: what sessions are signed from. */
  text: string;
}

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // Room for N up to 2^20 with r 8 (1 GB would be refused by Node's default of 32 MB).
    const maxmem = 256 * cost.N * cost.r + 1024 * 1024;
    scrypt(password, salt, KEY_BYTES, { ...cost, maxmem }, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

/** The hash of a password, as `realtime dashboard-password` prints it. */
export async function hashDashboardPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, COST);
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** Reads a configured hash; throws a TypeError saying what is wrong with it. */
export function parsePasswordHash(text: string): PasswordHash {
  const match = FORM.exec(text.trim());
  const why =
    'the dashboard password hash must be scrypt$N$r$p$<salt>$<hash>, as `realtime dashboard-password` prints it';
  if (!match) throw new TypeError(why);
  const [N, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  // N a power of two, and no cost that would stall the service on every sign-in.
  if (N < 2 || N > 1_048_576 || (N & (N - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) throw new TypeError(why);
  return {
    N,
    r,
    p,
    salt: Buffer.from(match[4] as string, 'base64url'),
    hash: Buffer.from(match[5] as string, 'base64url'),
    text: text.trim(),
  };
}

/** Whether the password is the one hashed; compared in constant time. */
export async function passwordMatches(stored: PasswordHash, password: string): Promise<boolean> {
  const given = await derive(password, stored.salt, stored);
  return given.length === stored.hash.length && timingSafeEqual(given, stored.hash);
}
