import type { SocketErrorCode } from '@realtime/protocol';

/** A room frame the service refuses: the room module answers it as an error frame naming the frame's ref and room. */
export class RoomRefusal extends Error {
  readonly code: SocketErrorCode;
  constructor(code: SocketErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
