import pino, { type Logger } from 'pino';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** JSON lines on stdout (pino): one event per line, ready for any log pipeline. */
export function createLogger(level: LogLevel = 'info'): Logger {
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime });
}

export type { Logger };
