/**
 * What a forwarding unit needs to know of a VP8 RTP packet (RFC 7741) to switch a viewer between
 * simulcast layers: whether it starts a frame, whether that frame is a keyframe (a switch may only
 * land on one) and, for keyframes, the picture size the layer carries.
 *
 * The payload descriptor:
 * ```
 *       0 1 2 3 4 5 6 7
 *      +-+-+-+-+-+-+-+-+
 *      |X|R|N|S|R| PID |  (always)
 *      +-+-+-+-+-+-+-+-+
 *   X: |I|L|T|K| RSV   |  (when X)
 *   I: |M| PictureID   |  (when I; M: a second byte follows, 15-bit id)
 *   L: |   TL0PICIDX   |  (when L)
 *  T/K:|TID|Y| KEYIDX  |  (when T or K)
 * ```
 * then, in the first packet of a frame (S=1, PID=0), the VP8 payload header (RFC 6386 9.1): a 3-byte
 * frame tag whose bit 0 (P) is 0 for a keyframe, and for keyframes the start code 9d 01 2a followed
 * by width and height, 16 bits little-endian each (low 14 bits the size, top 2 the scale).
 */

export interface Vp8Info {
  /** The first packet of a frame (S=1 on partition 0): where a decoder can start reading. */
  startOfFrame: boolean;
  /** The first packet of a keyframe: a viewer switched here decodes from this frame on. */
  keyframe: boolean;
  /** The keyframe's picture size (scale bits dropped); only on keyframes. */
  width?: number;
  height?: number;
  /** The picture id, 7 or 15 bits, when the descriptor carries one. */
  pictureId?: number;
}

/** The descriptor's bits (see above), also read by vp8-munger.ts. */
export const X_BIT = 0x80;
const S_BIT = 0x10;
const PID_MASK = 0x07;
export const I_BIT = 0x80;
export const L_BIT = 0x40;
const T_BIT = 0x20;
const K_BIT = 0x10;
export const M_BIT = 0x80;
/** The frame tag (3 bytes), start code (3) and the two sizes (2 each) that open a keyframe. */
const KEYFRAME_HEADER = 10;
const FRAME_TAG = 3;
const SIZE_MASK = 0x3fff;

/**
 * Reads a VP8 RTP payload (the RTP payload only, header and padding removed). Undefined when it is
 * too short for what its own bits announce, carries no VP8 data, or announces a keyframe without the
 * keyframe start code: none of those is a packet a switch can rely on.
 */
export function readVp8(payload: Uint8Array): Vp8Info | undefined {
  const first = payload[0];
  if (first === undefined) return undefined;
  let offset = 1;
  let pictureId: number | undefined;
  if ((first & X_BIT) !== 0) {
    const extension = payload[offset++];
    if (extension === undefined) return undefined;
    if ((extension & I_BIT) !== 0) {
      const high = payload[offset++];
      if (high === undefined) return undefined;
      if ((high & M_BIT) !== 0) {
        const low = payload[offset++];
        if (low === undefined) return undefined;
        pictureId = ((high & 0x7f) << 8) | low;
      } else {
        pictureId = high;
      }
    }
    if ((extension & L_BIT) !== 0) offset++;
    if ((extension & (T_BIT | K_BIT)) !== 0) offset++;
  }
  // The descriptor must be followed by at least one byte of VP8 data.
  if (offset >= payload.length) return undefined;

  const startOfFrame = (first & S_BIT) !== 0 && (first & PID_MASK) === 0;
  const info: Vp8Info = { startOfFrame, keyframe: false };
  if (pictureId !== undefined) info.pictureId = pictureId;
  if (!startOfFrame) return info;

  if (payload.length - offset < FRAME_TAG) return undefined;
  const tag = payload[offset] as number;
  if ((tag & 0x01) !== 0) return info;

  if (payload.length - offset < KEYFRAME_HEADER) return undefined;
  const code = offset + FRAME_TAG;
  if (payload[code] !== 0x9d || payload[code + 1] !== 0x01 || payload[code + 2] !== 0x2a) return undefined;
  info.keyframe = true;
  info.width = readSize(payload, code + 3);
  info.height = readSize(payload, code + 5);
  return info;
}

/** A 14-bit size, little-endian, without its 2 scale bits. */
function readSize(payload: Uint8Array, at: number): number {
  return ((payload[at] as number) | ((payload[at + 1] as number) << 8)) & SIZE_MASK;
}
