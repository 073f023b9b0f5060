import type { Member, RoomClaims } from '@realtime/protocol';
import type { Page, Seat } from '../core/hub.js';
import type { App } from '../engines/types.js';

/** A page in a room: its seat in the hub and the rules its room token gave it. */
export interface Membership {
  seat: Seat;
  claims: RoomClaims;
  /** Whether the page counts as a presence member there. */
  member: boolean;
}

/** A page as the rooms see it: who it is, the rooms it is in, and how frames reach it. */
export interface RoomPage extends Page {
  /** The page's app, refreshed from the store on joins and sends. */
  app: App;
  readonly user: string | null;
  readonly info: Member['info'];
  readonly state: 'greeting' | 'open' | 'closed';
  readonly rooms: Map<string, Membership>;
  send(frame: object): void;
  /** Waits while the page's queue is over half full; a page that does not read is closed (4200). */
  paced(): Promise<void>;
  close(code: number, reason: string): void;
}

/** Read through a function: the compiler would keep a narrowing of `state` across awaits. */
export function isClosed(page: RoomPage): boolean {
  return page.state === 'closed';
}
