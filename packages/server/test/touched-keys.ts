import type { Command } from 'ioredis';
import type { RedisClient } from '../src/engines/redis/client.js';

/**
 * The keys every command `client` sent while `run` ran touched (a script's KEYS included, as a
 * cluster routes them), in order and with repeats, each with the client's prefix.
 */
export async function touchedKeys(client: RedisClient, run: () => Promise<unknown>): Promise<string[]> {
  const redis = client.redis as unknown as { sendCommand(command: Command, ...rest: unknown[]): unknown };
  const send = redis.sendCommand;
  const keys: string[] = [];
  redis.sendCommand = function (this: unknown, command: Command, ...rest: unknown[]) {
    for (const key of command.getKeys()) keys.push(String(key));
    return send.call(this, command, ...rest);
  };
  try {
    await run();
  } finally {
    redis.sendCommand = send;
  }
  return keys;
}
