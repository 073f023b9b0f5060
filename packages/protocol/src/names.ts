import { utf8Length } from './encoding.js';
import { LIMITS } from './limits.js';

/** Why a name is refused, as one human sentence fragment; undefined when the name is fine. */
function nameProblem(what: string, name: string, maxBytes: number): string | undefined {
  if (name.length === 0) return `${what} is empty`;
  const bytes = utf8Length(name);
  if (bytes < 0) return `${what} is not valid UTF-8`;
  if (bytes > maxBytes) return `${what} is longer than ${maxBytes} bytes`;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return `${what} holds a control character`;
  }
  return undefined;
}

/** Room names: 1 to 200 bytes of UTF-8, no control characters, not starting with `$`. */
export function roomNameProblem(name: string): string | undefined {
  if (name.charCodeAt(0) === 0x24) return 'room names starting with $ are kept for the service';
  return nameProblem('room name', name, LIMITS.roomNameBytes);
}

/** User ids: same shape as room names. */
export function userIdProblem(id: string): string | undefined {
  if (id.charCodeAt(0) === 0x24) return 'user ids starting with $ are kept for the service';
  return nameProblem('user id', id, LIMITS.userIdBytes);
}

/** Event names: 1 to 100 bytes, no control characters. (The `$` prefix is checked by isReservedEvent.) */
export function eventNameProblem(name: string): string | undefined {
  return nameProblem('event name', name, LIMITS.eventNameBytes);
}

/** Names that start with `$` are kept for rooms (`$member.joined`, ...). */
export function isReservedEvent(name: string): boolean {
  return name.charCodeAt(0) === 0x24;
}

/** Sealing labels of decisions.md. */
export function roomLabel(room: string): string {
  return `room:${room}`;
}
export function userLabel(userId: string): string {
  return `user:${userId}`;
}
