/** What a button or form does while it runs, and how its failure reads. */
import { useState } from 'preact/hooks';
import { ApiFailure } from './api.js';

/** The service's one-line message, or "<what> failed." when it never answered in its own words. */
export const failed = (failure: unknown, what: string): string =>
  failure instanceof ApiFailure ? failure.message : `${what} failed.`;

/**
 * Busy while `work` runs (its button disabled), and its failure as `error`, cleared when it starts
 * again. `what` names the work in a failure the service did not word.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  async function run(what: string, work: () => Promise<void>): Promise<void> {
    setBusy(true);
    setError('');
    try {
      await work();
    } catch (failure) {
      setError(failed(failure, what));
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, setError, run };
}
