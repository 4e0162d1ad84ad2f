/**
 * Entry point of a runner child process: one engine session outside the server process, so its
 * native or WebAssembly work can be killed outright and cannot take the server down with it.
 */
import { processInit } from './engine-port.js';

const { url } = await processInit();
await import(url);
