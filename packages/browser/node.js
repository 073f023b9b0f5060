// @realtime/browser in Node (the package's `node` export condition; browsers and their bundlers get
// dist/index.js): the same SDK, with the ws package's WebSocket when Node has none (Node before 22),
// so `connect` needs no `WebSocket` option here. ws is loaded only in Node, only through this file.
import { WebSocket as NodeWebSocket } from 'ws';
import { connect as connectWith } from './dist/index.js';

export * from './dist/index.js';

/** `connect` of dist/index.js, its `WebSocket` defaulting to Node's own, else ws's. */
export function connect(options) {
  if (typeof options !== 'object' || options === null) return connectWith(options);
  const WebSocket = options.WebSocket ?? globalThis.WebSocket ?? NodeWebSocket;
  return connectWith({ ...options, WebSocket });
}
