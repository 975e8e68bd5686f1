// A Web Worker that computes files' SHA-256 off the page's thread, so the
// page stays responsive while thousands of files are hashed. It reads each
// File itself: the page never holds the bytes.
//
// crypto.subtle exists only in secure contexts (https, localhost); over
// plain http on a LAN the worker falls back to a streaming implementation.

import { Sha256 } from './sha256.js';

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

async function digest(file) {
  if (self.crypto && self.crypto.subtle) {
    return hex(await self.crypto.subtle.digest('SHA-256', await file.arrayBuffer()));
  }
  const h = new Sha256();
  const chunk = 4 << 20;
  for (let at = 0; at < file.size; at += chunk) {
    h.update(new Uint8Array(await file.slice(at, at + chunk).arrayBuffer()));
  }
  return hex(h.digest());
}

self.onmessage = async (e) => {
  const { id, file } = e.data;
  try {
    self.postMessage({ id, sha: await digest(file) });
  } catch (err) {
    self.postMessage({ id, error: (err && err.message) || String(err) });
  }
};
