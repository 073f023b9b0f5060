/**
 * One viewer's VP8 picture numbering (RFC 7741 payload descriptor) across the sources it is switched
 * between: each simulcast layer (and each new presenter) counts its own picture ids and TL0PICIDX, so
 * at a switch the viewer's browser would see both jump. Chromium's VP8 frame reference finder reads
 * its frames' references from those counts (the temporal layers of each TL0 picture, the picture ids
 * not yet received between two frames), and after such a jump it held frames back, or handed on a
 * frame whose reference it had wrong (seen: "Rejecting corrupted VP8 frame", then a second with no
 * frame after a switch). So each viewer gets one continuous count, as LiveKit and mediasoup rewrite
 * it: at a switch (on the new source's keyframe) the new source's picture id and TL0PICIDX are
 * offset to follow the last ones sent, and every later packet of that source is offset alike.
 *
 * `rewrite` answers the payload itself while the offsets are 0 (the first source keeps its own
 * numbers) or the descriptor carries neither field, and otherwise a copy with the two fields
 * rewritten: the payload is shared by every viewer of the source.
 */

import { I_BIT, L_BIT, M_BIT, X_BIT } from './vp8-payload.js';

const PICTURE_ID_15 = 0x8000;
const PICTURE_ID_7 = 0x80;
const TL0_RANGE = 0x100;

export class Vp8Munger {
  private pictureIdOffset = 0;
  private tl0Offset = 0;
  /** The newest picture id and TL0PICIDX sent (15 bits, 8 bits), once any was. */
  private lastPictureId: number | undefined;
  private lastTl0: number | undefined;
  /** The next packet starts a new source (its keyframe): the offsets are set from it. */
  private switching = false;

  /** The next packet rewritten is the first of a new source (a layer's keyframe, or a new presenter's). */
  switchTo(): void {
    this.switching = true;
  }

  /** The payload with its picture id and TL0PICIDX in this viewer's count (a copy when they change). */
  rewrite(payload: Buffer): Buffer {
    const at = fieldsOf(payload);
    if (!at) return payload;
    const pictureId = at.pictureId === undefined ? undefined : readPictureId(payload, at.pictureId, at.wide);
    const tl0 = at.tl0 === undefined ? undefined : (payload[at.tl0] as number);
    if (this.switching) {
      this.switching = false;
      this.pictureIdOffset =
        pictureId === undefined || this.lastPictureId === undefined
          ? 0
          : mod(this.lastPictureId + 1 - pictureId, PICTURE_ID_15);
      this.tl0Offset = tl0 === undefined || this.lastTl0 === undefined ? 0 : mod(this.lastTl0 + 1 - tl0, TL0_RANGE);
    }
    const outPictureId = pictureId === undefined ? undefined : mod(pictureId + this.pictureIdOffset, PICTURE_ID_15);
    const outTl0 = tl0 === undefined ? undefined : mod(tl0 + this.tl0Offset, TL0_RANGE);
    // Only forward: a late packet of an earlier picture must not pull the count back.
    if (
      outPictureId !== undefined &&
      (this.lastPictureId === undefined || ahead(outPictureId, this.lastPictureId, PICTURE_ID_15))
    )
      this.lastPictureId = outPictureId;
    if (outTl0 !== undefined && (this.lastTl0 === undefined || ahead(outTl0, this.lastTl0, TL0_RANGE)))
      this.lastTl0 = outTl0;
    if (outPictureId === pictureId && outTl0 === tl0) return payload;
    const copy = Buffer.from(payload);
    if (at.pictureId !== undefined && outPictureId !== undefined)
      writePictureId(copy, at.pictureId, at.wide, outPictureId);
    if (at.tl0 !== undefined && outTl0 !== undefined) copy[at.tl0] = outTl0;
    return copy;
  }
}

/** Where the picture id (and whether it is 15 bits) and TL0PICIDX sit, when the descriptor has either. */
function fieldsOf(payload: Buffer): { pictureId?: number; wide: boolean; tl0?: number } | undefined {
  const first = payload[0];
  if (first === undefined || (first & X_BIT) === 0) return undefined;
  const extension = payload[1];
  if (extension === undefined) return undefined;
  let offset = 2;
  const at: { pictureId?: number; wide: boolean; tl0?: number } = { wide: false };
  if ((extension & I_BIT) !== 0) {
    const high = payload[offset];
    if (high === undefined) return undefined;
    at.pictureId = offset;
    at.wide = (high & M_BIT) !== 0;
    offset += at.wide ? 2 : 1;
  }
  if ((extension & L_BIT) !== 0) {
    if (offset >= payload.length) return undefined;
    at.tl0 = offset;
    offset++;
  }
  if (offset > payload.length || (at.pictureId === undefined && at.tl0 === undefined)) return undefined;
  return at;
}

function readPictureId(payload: Buffer, at: number, wide: boolean): number {
  const high = payload[at] as number;
  return wide ? ((high & 0x7f) << 8) | (payload[at + 1] as number) : high & 0x7f;
}

/** Writes `id` in the field's own width (a 7-bit field keeps the low 7 bits: it wraps at 128 anyway). */
function writePictureId(payload: Buffer, at: number, wide: boolean, id: number): void {
  if (wide) {
    payload[at] = M_BIT | ((id >> 8) & 0x7f);
    payload[at + 1] = id & 0xff;
  } else payload[at] = id % PICTURE_ID_7;
}

function mod(value: number, range: number): number {
  return ((value % range) + range) % range;
}

/** Whether `a` is after `b` in a count that wraps at `range`. */
function ahead(a: number, b: number, range: number): boolean {
  const delta = mod(a - b, range);
  return delta !== 0 && delta < range / 2;
}
