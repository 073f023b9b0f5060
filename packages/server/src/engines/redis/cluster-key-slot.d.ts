// cluster-key-slot (ioredis' own slot function) ships no types.
declare module 'cluster-key-slot' {
  /** The Redis Cluster slot (0-16383) of a key, by its hash tag when it has one. */
  export default function calculateSlot(key: string | Buffer): number;
  /** The one slot of every key, or -1 when they span several. */
  export function generateMulti(keys: ReadonlyArray<string | Buffer>): number;
}
