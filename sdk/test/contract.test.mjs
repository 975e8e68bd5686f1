// src/types.ts against server/openapi.yaml, both ways (see contract.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { bare, differences, places, readDocument, readTypes } from "./contract.mjs";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const types = readTypes(here("../src/types.ts"));
const doc = readDocument(here("../../server/openapi.yaml"));

test("every type of types.ts has its place in the document", () => {
  const placed = new Set(Object.keys(places).map((k) => k.replace(/<.*/, "")));
  const missing = [...types.decls.keys()].filter((n) => !placed.has(n) && !bare.has(n));
  assert.deepEqual(missing, [], "types without a place in contract.mjs");
});

for (const [name, where] of Object.entries(places)) {
  test(`${name} agrees with ${where[1]}`, () => {
    assert.deepEqual(differences(types, doc, name, where), []);
  });
}
