import { UsageError } from './usage-error.js';

export type FlagValues = Record<string, string | boolean | string[] | undefined>;
/** `multiple`: the flag may be given again; its variable holds one value (which may list several). */
export type FlagTypes = Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;

/** The environment variable of a flag: `--allow-private-webhooks` is `REALTIME_ALLOW_PRIVATE_WEBHOOKS`. */
export function envName(flag: string): string {
  return `REALTIME_${flag.toUpperCase().replace(/-/g, '_')}`;
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

/**
 * Fills the flags left out of the command line from their environment variables: a flag given on the
 * command line wins. An empty variable counts as unset (as `VAR= cmd` usually means). `source` names
 * where a value came from (`--port` or `REALTIME_PORT`), so that an error about it names what to fix.
 */
export function withEnv(
  values: FlagValues,
  types: FlagTypes,
  flags: readonly string[],
  env: NodeJS.ProcessEnv,
): { values: FlagValues; source: (flag: string) => string } {
  const out: FlagValues = { ...values };
  const fromEnv = new Set<string>();
  for (const flag of flags) {
    if (out[flag] !== undefined) continue;
    const name = envName(flag);
    const text = env[name];
    if (text === undefined || text === '') continue;
    fromEnv.add(flag);
    if (types[flag]?.type !== 'boolean') {
      out[flag] = types[flag]?.multiple === true ? [text] : text;
      continue;
    }
    const word = text.trim().toLowerCase();
    if (TRUE.has(word)) out[flag] = true;
    else if (FALSE.has(word)) out[flag] = false;
    else throw new UsageError(`${name} must be 1 or 0 (or true/false, yes/no, on/off) (got ${JSON.stringify(text)})`);
  }
  return { values: out, source: (flag) => (fromEnv.has(flag) ? envName(flag) : `--${flag}`) };
}
