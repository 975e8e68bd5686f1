// What the tests against a running server share: its address and users
// (from the Go test that started it), sign-in by a mailed code, waiting
// for a state, and the photos to upload.
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { KiloClient } from "kilo-sdk";
import { fileFromPath } from "kilo-sdk/node";

export const baseUrl = need("KILO_BASE_URL");
export const apiKey = need("KILO_API_KEY");
export const emails = need("KILO_EMAILS").split(",");
export const corpus = need("KILO_CORPUS");
const mailbox = need("KILO_MAILBOX");

function need(name) {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run these tests through go test ./sdk/`);
  return v;
}

/** A client signed in with the API key. */
export function keyClient(opts = {}) {
  return new KiloClient({ baseUrl, getAccessToken: () => apiKey, ...opts });
}

/** mailedCode waits for the next sign-in code mailed to email. */
export async function mailedCode(email) {
  const res = await fetch(`${mailbox}/code?to=${encodeURIComponent(email)}`);
  assert.equal(res.status, 200, `no sign-in code for ${email}`);
  return res.text();
}

/** signIn signs email in by a mailed code and returns a client using its access token. */
export async function signIn(email) {
  const anon = new KiloClient({ baseUrl });
  const { challengeId, delivery } = await anon.loginStart({ email, locale: "en" });
  assert.equal(delivery, "email_code");
  const tokens = await anon.loginVerify({ challengeId, code: await mailedCode(email) });
  assert.equal(tokens.user.email, email);
  return { tokens, client: new KiloClient({ baseUrl, getAccessToken: () => tokens.accessToken }) };
}

// A deadline that only catches a hang: two busy cores run the whole suite.
export const patience = 10 * 60_000;

/** waitFor calls check until it answers something truthy, and returns that. */
export async function waitFor(what, check, { timeoutMs = patience, everyMs = 250 } = {}) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const got = await check();
    if (got) return got;
    if (Date.now() > end) assert.fail(`waited ${timeoutMs / 1000} s for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** photos is n photos of the corpus as upload sources: photos/, then odd/orientation-*.jpg. */
export async function photos(n) {
  const paths = [
    ...readdirSync(join(corpus, "photos")).sort().map((f) => join(corpus, "photos", f)),
    ...readdirSync(join(corpus, "odd")).filter((f) => /^orientation-\d\.jpg$/.test(f)).sort().map((f) => join(corpus, "odd", f)),
  ];
  assert.ok(paths.length >= n, `the corpus has ${paths.length} photos, not ${n}`);
  return Promise.all(paths.slice(0, n).map(fileFromPath));
}
