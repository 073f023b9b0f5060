/**
 * The layer each viewer gets behind real shaped links (a presenter and three viewers on 300 kbit/s,
 * 1.5 Mbit/s and loopback; a group of five with one member behind 800 kbit/s), one suite after the
 * other. As root (network namespaces and tc). `npm run test:layers` runs them, with nothing else
 * running (their Chromiums' encoders need both cores of a 2-core machine); not in `npm test` yet,
 * for its time (SHAPED_LINKS in vitest.config.ts). ./simulcast.suite.ts (./video-ramp.test.ts), in
 * `npm test`, shows simulcast and layer choice on loopback.
 */
import './adaptive-layers.suite.js';
import './group-layers.suite.js';
