import type { Departures } from '../core/departures.js';
import type { Component } from './component.js';

/** The retries of page closes and webhook events the store could not take, and the check of its records. */
export function departuresComponent(departures: Departures): Component {
  return {
    name: 'departures',
    start: () => departures.start(),
    stop: async () => {
      // One last try of what waits; what the store still holds after it goes with this node's lease.
      await departures.flush();
      departures.close();
    },
  };
}
