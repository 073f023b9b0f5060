/**
 * Simulcast and the layer each viewer gets, in headless Chromium. The three suites run here, one
 * after another in one file, not as three files side by side: each runs a presenter's 720p encoder
 * in three layers and several decoders, and two of them at once on a 2-core machine starve the
 * encoder of the CPU its top layer needs.
 */
import './simulcast.suite.js';
import './adaptive-layers.suite.js';
import './group-layers.suite.js';
