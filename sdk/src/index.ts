// kilo-sdk: the KILO app's client for the Lightbox API.
export * from "./types.js";
export * from "./errors.js";
export * from "./client.js";
export * from "./pagination.js";
export * from "./realtime.js";
export * from "./uploads.js";
export { backoffDelay, sleep, type BackoffOptions } from "./backoff.js";
