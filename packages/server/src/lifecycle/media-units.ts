import type { UnitHost } from '../units/unit-host.js';
import type { Component } from './component.js';

/** This node's forwarding units: made on demand by streams and group calls, all closed on stop. */
export function mediaUnitsComponent(units: UnitHost): Component {
  return { name: 'media units', start: () => {}, stop: () => units.close() };
}
