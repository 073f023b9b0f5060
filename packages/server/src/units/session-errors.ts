/** The media sessions' errors, apart from werift so that code which only checks them does not load it. */

/** No UDP port was free for a new session (the media port range is used up): the node is full, not the page wrong. */
export class NoMediaPortError extends Error {
  constructor() {
    super('no free UDP port for media on this node (the media port range is used up)');
    this.name = 'NoMediaPortError';
  }
}

/** The session ended while its description was being made: there is nothing to send. */
export class SessionClosedError extends Error {
  constructor() {
    super('the media session ended while its description was being made');
    this.name = 'SessionClosedError';
  }
}
