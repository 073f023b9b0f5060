export * from './codes.js';
export * from './encoding.js';
export * from './keys.js';
export * from './limits.js';
export * from './names.js';
export * from './seal.js';
export * from './signing.js';
export * from './wire.js';
