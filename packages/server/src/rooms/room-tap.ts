import type { Tapped } from '../core/console-tap.js';
import type { RoomPage } from './room-page.js';

/** A page's join or leave as the live console shows it. */
export function tappedPage(page: RoomPage, kind: 'join' | 'leave', room: string): Tapped {
  return page.user === null ? { kind, room } : { kind, room, user: page.user };
}
