// What goes wrong, through the installed package: coded errors, an upload
// aborted half-way, and a stream that breaks and resumes with state_sync.
import { test } from "node:test";
import assert from "node:assert/strict";
import { followEvents, isKiloApiError, KiloApiError, KiloClient, uploadFiles } from "kilo-sdk";
import { apiKey, baseUrl, keyClient, photos, waitFor } from "./helpers.mjs";

test("a refusal is a KiloApiError with its code, status and request id", async () => {
  const client = keyClient();
  const missing = await client.getProject(crypto.randomUUID()).catch((e) => e);
  assert.ok(isKiloApiError(missing) && missing instanceof KiloApiError);
  assert.equal(missing.status, 404);
  assert.equal(missing.code, "not_found");
  assert.match(missing.requestId, /\S/);
  assert.equal(missing.body.code, "not_found");

  const invalid = await client.createProject({ title: "" }).catch((e) => e);
  assert.equal(invalid.status, 400);
  assert.equal(invalid.code, "validation_failed");
  assert.ok(invalid.details.fields.title, "details name the field");

  const stranger = new KiloClient({ baseUrl, getAccessToken: () => apiKey + "x" });
  const refused = await stranger.listProjects().catch((e) => e);
  assert.equal(refused.status, 401);
  assert.notEqual(refused.requestId, missing.requestId);
});

test("an upload aborted half-way stops, and only what was finalized stays", async () => {
  const client = keyClient();
  const project = await client.createProject({ title: "Aborted" });
  const files = await photos(10);
  const stop = new AbortController();
  let finalized = 0;
  const run = uploadFiles(client, project.id, files, {
    concurrency: 1, chunkSize: 2, signal: stop.signal,
    onFile: (f) => { if ("assetId" in f && ++finalized === 2) stop.abort(); },
  });
  await assert.rejects(run, (e) => e.name === "AbortError");
  assert.equal(finalized, 2);
  // Nothing is prepared or sent after the abort: the project holds the
  // first chunk only.
  const stats = await client.getProjectStats(project.id);
  assert.equal(stats.total, 2);
  const { items } = await client.listAssets(project.id);
  assert.ok(items.length <= 3, `${items.length} assets after an abort in the second chunk`);
});

test("a broken stream reconnects with Last-Event-ID and gets state_sync", async () => {
  // The first stream's body ends after its first event, as a dropped
  // connection would; the second connection waits until events it missed
  // were published, so that the server has something to sync.
  let streams = 0;
  let release;
  const missed = new Promise((resolve) => { release = resolve; });
  const cutting = async (input, init) => {
    if (!String(input).includes("/realtime?")) return fetch(input, init);
    if (++streams > 1) {
      await missed;
      return fetch(input, init);
    }
    const res = await fetch(input, init);
    const reader = res.body.getReader();
    let sent = "";
    const body = new ReadableStream({
      async pull(ctrl) {
        const { value, done } = await reader.read();
        if (done) return ctrl.close();
        sent += new TextDecoder().decode(value);
        ctrl.enqueue(value);
        if (/\n\n/.test(sent.replace(/^:.*\n/gm, ""))) {
          reader.cancel();
          ctrl.close();
        }
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  const client = keyClient({ fetchImpl: cutting });
  const project = await client.createProject({ title: "Reconnect" });
  const opened = [];
  const events = followEvents(client, { projectId: project.id, backoff: { baseMs: 50, maxMs: 500 }, onOpen: (o) => opened.push(o) });
  await waitFor("the stream to open", () => events.connects === 1);
  // Events the first connection takes one of and the second misses.
  const up = await uploadFiles(client, project.id, await photos(2));
  assert.equal(up.uploaded.length, 2);
  await waitFor("the first connection to break", () => streams === 2);
  await waitFor("both photos processed", async () => (await client.getBatch(up.batchIds[0])).batch.completedAt);
  release();
  const got = [];
  for await (const ev of events) {
    got.push(ev);
    if (ev.type === "state_sync") break;
  }
  events.close();
  await events.done;
  assert.equal(events.connects, 2);
  assert.ok(opened[1].lastEventId, "the second connection resumed after an id");
  const sync = got.at(-1);
  assert.equal(sync.type, "state_sync");
  assert.equal(typeof sync.stats.total, "number");
  assert.ok(Array.isArray(sync.batches));
  assert.notEqual(got[0].type, "state_sync", "the first event came on the first connection");
});
