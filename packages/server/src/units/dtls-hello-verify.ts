/**
 * A mend to werift's DTLS client (0.24), written here because werift has no option for it: a
 * HelloVerifyRequest that comes again once the client has answered one (its ClientHello was sent
 * twice while the server was slow, and the server answered both) makes werift's flight 3 throw, and
 * the connection fails. RFC 6347 (4.2.1, 4.2.4) has the client keep to its flight: its own timer
 * sends the ClientHello with the cookie again. Seen between two werift peers on a loaded machine
 * (a unit facing a werift test page); Chromium's DTLS servers send no HelloVerifyRequest.
 *
 * Applied once, on import, to werift's `DtlsClient` (the module instance the units use): from
 * `connect`, a HelloVerifyRequest after flight 3 is dropped before werift's handler sees it.
 */
import { DtlsClient } from 'werift';

/** The handshake type of a HelloVerifyRequest (RFC 6347 4.3.2), and the client flight that answers one. */
export const HELLO_VERIFY_REQUEST = 3;
const ANSWERED_FLIGHT = 3;

type Handshakes = Parameters<DtlsClient['onHandleHandshakes']>[0];

/** The handshakes werift's client should act on now: a HelloVerifyRequest only before it answered one. */
export function handshakesToHandle(handshakes: Handshakes, flight: number): Handshakes {
  if (flight < ANSWERED_FLIGHT) return handshakes;
  return handshakes.filter((handshake) => handshake.msg_type !== HELLO_VERIFY_REQUEST);
}

const MENDED = Symbol.for('realtime.dtlsHelloVerifyMended');
const prototype = DtlsClient.prototype as DtlsClient & { [MENDED]?: true };
if (!prototype[MENDED]) {
  prototype[MENDED] = true;
  const connect = prototype.connect;
  prototype.connect = function (this: DtlsClient): Promise<void> {
    const handle = this.onHandleHandshakes;
    this.onHandleHandshakes = (handshakes) => handle(handshakesToHandle(handshakes, this.dtls.flight));
    return connect.call(this);
  };
}
