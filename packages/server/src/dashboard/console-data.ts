/** Data of a console entry: JSON text cut to this many bytes of UTF-8, ending "…" when cut. */
export const CONSOLE_DATA_BYTES = 1024;

/**
 * JSON text cut to at most CONSOLE_DATA_BYTES of UTF-8, "…" (3 bytes) included, so cutting again
 * changes nothing; a character split by the cut is left out.
 */
export function cutData(text: string): string {
  // At most 3 bytes per UTF-16 unit: short texts need no measuring.
  if (text.length * 3 <= CONSOLE_DATA_BYTES || Buffer.byteLength(text) <= CONSOLE_DATA_BYTES) return text;
  const head = Buffer.from(text.slice(0, CONSOLE_DATA_BYTES)).subarray(0, CONSOLE_DATA_BYTES - 3);
  return `${head.toString().replace(/\uFFFD+$/, '')}…`;
}
