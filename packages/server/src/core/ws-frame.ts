/**
 * Frames text messages as the service sends them (RFC 6455 section 5.2: FIN, opcode 1, unmasked).
 * Done once per event, whatever the number of pages it goes to; `ws` would frame per socket.
 */

/** A framed message: one buffer, or parts written one after another (a large payload shared by many frames). */
export type Frame = Buffer | readonly Buffer[];

function headerLength(length: number): number {
  return length < 126 ? 2 : length < 65_536 ? 4 : 10;
}

function writeHeader(frame: Buffer, length: number): void {
  frame[0] = 0x81;
  if (length < 126) {
    frame[1] = length;
  } else if (length < 65_536) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    frame.writeUInt32BE(length >>> 0, 6);
  }
}

export function frameText(payload: Buffer): Buffer {
  const header = headerLength(payload.length);
  const frame = Buffer.allocUnsafe(header + payload.length);
  writeHeader(frame, payload.length);
  payload.copy(frame, header);
  return frame;
}

/** Frames a string, encoding it straight into the frame (one pass, no intermediate buffer). */
export function frameString(text: string): Buffer {
  const length = Buffer.byteLength(text);
  const header = headerLength(length);
  const frame = Buffer.allocUnsafe(header + length);
  writeHeader(frame, length);
  frame.write(text, header);
  return frame;
}

const CLOSE_BRACE = Buffer.from('}');

/**
 * Frames `<prefix><data>}` as parts: the header and prefix in one small buffer, then the data buffer
 * itself, shared by every frame that carries it (a large event to many rooms is not copied per room).
 */
export function frameAround(prefix: string, data: Buffer): Buffer[] {
  const prefixLength = Buffer.byteLength(prefix);
  const length = prefixLength + data.length + 1;
  const header = headerLength(length);
  const head = Buffer.allocUnsafe(header + prefixLength);
  writeHeader(head, length);
  head.write(prefix, header);
  return [head, data, CLOSE_BRACE];
}

export function frameLength(frame: Frame): number {
  if (Buffer.isBuffer(frame)) return frame.length;
  let total = 0;
  for (const part of frame as readonly Buffer[]) total += part.length;
  return total;
}

export function frameJson(value: unknown): Buffer {
  return frameString(JSON.stringify(value));
}
