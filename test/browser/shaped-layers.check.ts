/**
 * `npm run test:layers`: the layer each viewer gets behind real shaped links (a presenter and three
 * viewers on 300 kbit/s, 1.5 Mbit/s and loopback; a group of five with one member behind
 * 800 kbit/s), one suite after the other. Not in `npm test` yet: on a 2-core machine a viewer still
 * goes a second without a new frame now and then inside the windows these suites check (see
 * docs/calls.md and docs/design/simulcast-on-werift.md), and a check that passes some runs only is
 * no check for CI. They run as root (network namespaces); ./simulcast.suite.ts, in `npm test`
 * (./video-ramp.test.ts), shows simulcast and layer choice on loopback.
 */
import './adaptive-layers.suite.js';
import './group-layers.suite.js';
