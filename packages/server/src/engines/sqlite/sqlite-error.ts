import Database from 'better-sqlite3';
import { StoreError } from '../store-error.js';

/**
 * A SQLite (or file system) error as a StoreError: SQLITE_FULL and ENOSPC are a full disk, any
 * other SQLite error makes the store unavailable. Anything else (a bug) is returned as it is.
 */
export function asStoreError(error: unknown): unknown {
  if (error instanceof StoreError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'SQLITE_FULL' || code === 'ENOSPC') return new StoreError('full', { cause: error });
  if (error instanceof Database.SqliteError) return new StoreError('unavailable', { cause: error });
  // better-sqlite3's own refusal once the file is closed (a request still running at shutdown).
  if (error instanceof TypeError && error.message === 'The database connection is not open') {
    return new StoreError('unavailable', { cause: error });
  }
  return error;
}

/** The function with its SQLite errors (thrown or rejected) turned into StoreErrors. */
export function withStoreErrors<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    try {
      const result = fn(...args);
      if (result instanceof Promise) {
        return result.catch((error: unknown) => {
          throw asStoreError(error);
        }) as R;
      }
      return result;
    } catch (error) {
      throw asStoreError(error);
    }
  };
}
