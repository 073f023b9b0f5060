import type { RoomEvent, UserEvent } from '../engines/types.js';
import { type Frame, frameAround, frameLength, frameString } from './ws-frame.js';

/**
 * What the hub turns publications into: it encodes once per publication (or presence window) and
 * hands that one frame to every page, so the encoding is the encoder's and the fan-out the hub's.
 */
export interface FrameEncoder {
  /** The `event` frame of a room or user publication. */
  event(publication: RoomEvent | UserEvent): Frame;
  /** A frame whose JSON text is written already: a feature's page frame, a `members` window. */
  text(json: string): Frame;
  /** A frame's size in bytes: what a page catching up on history holds is bounded by it. */
  length(frame: Frame): number;
}

/**
 * The frame of a publication, encoded once for every page it goes to. A large `data` already encoded
 * by the emitter (`dataBytes`) is shared as is, not copied into each room's frame.
 */
export function encodeEvent(publication: RoomEvent | UserEvent): Frame {
  let text = '{"t":"event"';
  if (publication.kind === 'room') {
    text += `,"room":${JSON.stringify(publication.room)}`;
    if (publication.id !== undefined) text += `,"id":"${publication.id}"`;
    text += `,"event":${JSON.stringify(publication.event)}`;
    if (publication.from !== undefined) text += `,"from":${JSON.stringify(publication.from)}`;
  } else {
    text += `,"event":${JSON.stringify(publication.event)}`;
  }
  if (publication.dataBytes) return frameAround(`${text},"data":`, publication.dataBytes);
  return frameString(`${text},"data":${publication.data}}`);
}

/** WebSocket text frames (ws-frame.ts), written to pages' sockets as they are. */
export const wsFrameEncoder: FrameEncoder = { event: encodeEvent, text: frameString, length: frameLength };
