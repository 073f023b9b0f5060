/** JSX-like templates without a build step of their own: htm bound to Preact's `h`. */
import htm from 'htm';
import { h } from 'preact';

export const html = htm.bind(h);
