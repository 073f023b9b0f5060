/**
 * True for a JSON-style object: not null and not an array. Class instances pass too; every caller
 * checks its fields one by one afterwards, so only the shape's kind is decided here.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
