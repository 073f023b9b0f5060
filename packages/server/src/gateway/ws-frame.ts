/**
 * Frames a text message as the service sends it (RFC 6455 section 5.2: FIN, opcode 1, unmasked).
 * Done once per event, whatever the number of pages it goes to; `ws` would frame per socket.
 */
export function frameText(payload: Buffer): Buffer {
  const length = payload.length;
  const headerLength = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerLength + length);
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
  payload.copy(frame, headerLength);
  return frame;
}

export function frameJson(value: unknown): Buffer {
  return frameText(Buffer.from(JSON.stringify(value)));
}
