/**
 * A presenter's 720p camera through a forwarding unit: its send rate ramping on the unit's
 * feedback, then simulcast and the layer each viewer gets on loopback. One file, one suite after
 * the other: each runs a 720p encoder (three of them with simulcast), and two at once on a 2-core
 * machine starve each other of the CPU the ramp and the top layer need.
 */
import './uplink-bitrate.suite.js';
import './simulcast.suite.js';
