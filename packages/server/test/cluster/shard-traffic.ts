/**
 * Traffic for the failover and reshard tests: rooms picked so they sit on every primary, a steady
 * stream of API emits (with history) to each, page sends from a page in each, and what each request
 * was answered, when.
 */
import calculateSlot from 'cluster-key-slot';
import type { App } from '../../src/index.js';
import { API } from '../helpers.js';
import type { ClusterNode as RedisNode } from '../redis-cluster.js';
import { bounded, type Cluster, nodeRequest } from './cluster.js';
import type { ResumingPage } from './resuming-page.js';

export const HISTORY: [number, number] = [1000, 1];
/** A request not answered in this long fails the test: the API must never hang. */
export const REQUEST_BOUND_MS = 8000;
/** Between two emits of one room's stream: a steady stream, not a flood the machine cannot take. */
const PACE_MS = 15;

/** The slot of a room (its keys' hash tag). */
export const slotOfRoom = (app: App, room: string): number => calculateSlot(`{${app.key}:${room}}`);

export const owns = (node: RedisNode, slot: number): boolean =>
  node.slots.some(([from, to]) => slot >= from && slot <= to);

/** `perPrimary` room names on each primary, in primary order. */
export function roomsOnEveryPrimary(app: App, primaries: RedisNode[], perPrimary: number, name: string): string[] {
  const rooms: string[] = [];
  for (const primary of primaries) {
    let found = 0;
    for (let i = 0; i < 10_000 && found < perPrimary; i++) {
      const room = `${name}-${i}`;
      if (!rooms.includes(room) && owns(primary, slotOfRoom(app, room))) {
        rooms.push(room);
        found++;
      }
    }
  }
  return rooms;
}

export interface Answer {
  room: string;
  data: number;
  status: number;
  error: string | undefined;
  message: string | undefined;
  id: string | undefined;
  startedAt: number;
  answeredAt: number;
}

export interface Traffic {
  answers: Answer[];
  /** Refs of page sends made (per room), to match with the pages' `sent` answers. */
  sends: Map<string, number[]>;
  /** Emits answered 200 for a room (in the order sent, which is the order answered). */
  acked(room: string): Answer[];
  stop(): Promise<void>;
}

/** One emit loop per room (each sends the next once the last was answered) and page sends every few emits. */
export function startTraffic(cluster: Cluster, rooms: string[], senders: Map<string, ResumingPage>): Traffic {
  const answers: Answer[] = [];
  const sends = new Map<string, number[]>(rooms.map((room) => [room, []]));
  let stopped = false;
  const loops = rooms.map(async (room, r) => {
    for (let data = 0; !stopped; data++) {
      const startedAt = Date.now();
      const node = cluster.nodeOf(r + data);
      const body = JSON.stringify({ rooms: [room], event: 'e', data, history: { [room]: HISTORY } });
      const answer = await bounded(
        nodeRequest(node, cluster.app, { path: `${API}/emit`, body }),
        `emit ${data} to ${room} through ${node.name}`,
        REQUEST_BOUND_MS,
      );
      const ids = answer.json.ids as Record<string, string> | undefined;
      answers.push({
        room,
        data,
        status: answer.status,
        error: answer.json.error,
        message: answer.json.message,
        id: ids?.[room],
        startedAt,
        answeredAt: Date.now(),
      });
      if (data % 4 === 0) {
        const ref = senders.get(room)?.send('p', data);
        if (ref !== undefined) sends.get(room)?.push(ref);
      }
      await new Promise((resolve) => setTimeout(resolve, PACE_MS));
    }
  });
  const done = Promise.all(loops);
  return {
    answers,
    sends,
    acked: (room) => answers.filter((a) => a.room === room && a.status === 200),
    async stop() {
      stopped = true;
      await done;
    },
  };
}
