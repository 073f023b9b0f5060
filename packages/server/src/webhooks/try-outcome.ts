import type { TryOutcome, TryResult } from '../engines/types.js';

/** Every outcome the tries chart counts, in the order it shows them. */
export const TRY_OUTCOMES: readonly TryOutcome[] = ['2xx', '3xx', '4xx', '5xx', 'timeout', 'unreachable', 'not_public'];

/** How a try ended, as counted: the answer's status class, or why nothing answered. */
export function tryOutcome(result: TryResult): TryOutcome {
  const { status } = result;
  if (status === 0) return result.error ?? 'unreachable';
  if (status >= 200 && status < 300) return '2xx';
  if (status >= 300 && status < 400) return '3xx';
  if (status >= 400 && status < 500) return '4xx';
  // 5xx, and whatever odd status a server sends outside 200 to 499: a failure on its side.
  return '5xx';
}
