// The seed-002 flow in one scenario, through the package as npm installs
// it: sign in by a mailed code, make a project, upload 20 photos while
// following the batch, then everything a culling app does with them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { collect, followEvents, isKiloApiError, KiloClient, paginate, uploadFiles } from "kilo-sdk";
import { baseUrl, emails, photos, signIn, waitFor } from "./helpers.mjs";

test("the KILO app's whole flow against a real server and worker", async (t) => {
  const { client, tokens } = await signIn(emails[1]);
  assert.equal(tokens.user.displayName, emails[1].split("@")[0]);
  const project = await client.createProject({ title: "Harbour wedding", shootDate: "2026-06-20", timezone: "Europe/Lisbon" });
  assert.equal(project.studioId, null);
  assert.equal(project.status, "active");

  // Upload, with the project's events followed from before the first byte
  // (a fast job can end before its batch's own stream could open).
  const files = await photos(20);
  const seen = [];
  const events = followEvents(client, { projectId: project.id, onEvent: (ev) => seen.push(ev) });
  await waitFor("the event stream to open", () => events.connects > 0);
  let batchStream;
  const progress = [];
  const result = await uploadFiles(client, project.id, files, {
    concurrency: 3, chunkSize: 20,
    onProgress: (p) => progress.push(p),
    onBatch: (answer) => { batchStream = followEvents(client, { batchId: answer.batchId, lastEventId: events.lastEventId }); },
  });
  assert.deepEqual(result.failed, []);
  assert.equal(result.uploaded.length, 20);
  assert.equal(result.batchIds.length, 1);
  assert.equal(result.queuedJobs.length, 20);
  const last = progress.at(-1);
  assert.equal(last.filesDone, 20);
  assert.equal(last.bytesSent, files.reduce((n, f) => n + f.blob.size, 0));
  assert.equal(last.bytesSent, last.bytesTotal);
  assert.ok(progress.some((p) => p.bytesSent > 0 && p.bytesSent < p.bytesTotal), "progress came file by file");

  await t.test("job.done for every job of the batch", async () => {
    const [batchId] = result.batchIds;
    const done = () => new Set(seen.filter((e) => e.type === "job.done" && e.batchId === batchId && e.status === "done").map((e) => e.jobId));
    await waitFor("job.done of all 20 jobs", () => result.queuedJobs.every((id) => done().has(id)));
    for await (const ev of batchStream) {
      // The batch's own stream ends on its completion (or the snapshot of it).
      if (ev.type === "batch.completed" || (ev.type === "state_sync" && ev.batches[0]?.completedAt)) break;
    }
    batchStream.close();
    const { batch, jobs } = await client.getBatch(batchId);
    assert.equal(batch.status, "completed");
    assert.equal(jobs.filter((j) => j.status === "done").length, 20);
    assert.ok(jobs.every((j) => j.error === null && j.errorCode === null));
  });

  await t.test("stats and assets", async () => {
    const stats = await waitFor("all 20 ready to cull", async () => {
      const s = await client.getProjectStats(project.id);
      return s.total === 20 && s.uploading === 0 && s.processing === 0 && s;
    });
    assert.equal(stats.failed, 0);
    const all = await collect(paginate((cursor) => client.listAssets(project.id, { cursor, limit: 7 })));
    assert.deepEqual(all.map((a) => a.filename).sort(), files.map((f) => f.name).sort());
    // One corpus photo was rated in digiKam, whose XMP packet it carries
    // (exiftool: XMP-xmp Rating 5, ColorLabel 6, magenta): it arrives with
    // that rating; the others with none. coldripple's 4 stars are in
    // ACDSee's own namespace (acdsee:Rating), which is not read.
    const fromXMP = {
      "colorfulcups-2560x1600.jpg": { rating: 5, colorLabel: "purple" },
    };
    for (const a of all) {
      assert.equal(typeof a.ingestedAt, "string");
      assert.equal(typeof a.exif, "object");
      const want = fromXMP[a.filename];
      if (want) {
        assert.deepEqual({ rating: a.myRating?.rating, colorLabel: a.myRating?.colorLabel, picked: a.myRating?.picked }, { ...want, picked: false }, a.filename);
      } else {
        assert.equal(a.myRating, undefined, a.filename);
      }
      assert.match(a.bestPreviewUrl, /^http/);
    }
  });
  const all = await collect(paginate((cursor) => client.listAssets(project.id, { cursor, limit: 50 })));
  const byName = new Map(all.map((a) => [a.filename, a]));
  const ids = files.map((f) => byName.get(f.name).id);

  await t.test("rate, and cull in bulk", async () => {
    const r = await client.setRating(ids[0], { rating: 5, starred: true, notes: "the one" });
    assert.equal(r.rating, 5);
    assert.equal(r.starred, true);
    const cull = await client.applyCullActions(project.id, {
      actions: [
        ...ids.slice(0, 6).map((assetId) => ({ assetId, picked: true, rejected: false })),
        ...ids.slice(6, 10).map((assetId) => ({ assetId, rejected: true, rating: null })),
      ],
    }, { idempotencyKey: crypto.randomUUID() });
    assert.equal(cull.ok, true);
    assert.equal(cull.updatedAssetIds.length, 10);
    const picked = await client.listAssets(project.id, { picked: true });
    assert.deepEqual(picked.items.map((a) => a.id).sort(), ids.slice(0, 6).sort());
    const first = await client.getAsset(ids[0]);
    assert.equal(first.myRating.picked, true);
    assert.equal(first.myRating.rating, 5);
  });

  await t.test("review a cluster and choose its winner", async () => {
    // A cluster run may still re-form the groups as the last photos become
    // searchable: a winner chosen from a group that changed meanwhile is
    // refused (400, not one of its assets), and the app reads the groups
    // again, as this does. Any other refusal ends the test.
    const { cluster, other } = await waitFor("a cluster of two photos or more that takes a chosen winner", async () => {
      const page = await client.listClusters(project.id, { limit: 100 });
      const cluster = page.items.find((c) => c.assets.length >= 2);
      if (!cluster) return false;
      const other = cluster.assets.find((m) => m.assetId !== cluster.winnerAssetId);
      try {
        const chosen = await client.setWinner(cluster.id, { winnerAssetId: other.assetId });
        assert.equal(chosen.winnerAssetId, other.assetId);
        return { cluster, other };
      } catch (err) {
        if (isKiloApiError(err) && (err.status === 404 || err.body?.details?.fields?.winnerAssetId)) return false;
        throw err;
      }
    });
    const reviewed = await client.updateCluster(cluster.id, { title: "First dance", reviewed: true });
    assert.equal(reviewed.title, "First dance");
    assert.equal(reviewed.reviewed, true);
    const again = await client.getCluster(cluster.id);
    assert.equal(again.winnerAssetId, other.assetId);
    assert.equal(again.assets.find((m) => m.assetId === other.assetId).role, "winner");
  });

  await t.test("apply an edit to three photos", async () => {
    const edit = await client.createEdit(ids[0], { name: "Warm", params: { exposure: 0.3, temperature: 400 } });
    const applied = await client.applyEditBatch(edit.id, { assetIds: ids.slice(1, 4) }, { idempotencyKey: crypto.randomUUID() });
    assert.equal(applied.status, "queued");
    await waitFor("the edit batch to end", async () => (await client.getBatch(applied.batchId)).batch.completedAt);
    assert.equal((await client.getBatch(applied.batchId)).batch.status, "completed");
    for (const id of ids.slice(1, 4)) {
      const { files: got } = await client.getAssetFiles(id);
      assert.ok(got.some((f) => f.kind === "edit_preview"), `an edited preview of ${id}`);
      assert.equal((await client.listEdits(id)).items.length, 1);
    }
  });

  await t.test("a password gallery through the public routes", async () => {
    const g = await client.createGallery(project.id, { title: "Proofs", assetIds: ids.slice(0, 5), password: "harbour-2026", allowDownloads: true });
    assert.match(g.shareSlug, /^[a-z2-7]{10}$/);
    assert.equal(g.requiresPassword, true);
    assert.equal(g.assetCount, 5);
    assert.equal((await client.getGallery(g.id)).shareSlug, g.shareSlug);

    const visitor = new KiloClient({ baseUrl });
    const locked = await visitor.publicGetGallery(g.shareSlug);
    assert.equal(locked.requiresAuth, true);
    assert.equal(locked.assets, undefined);
    await assert.rejects(visitor.publicAuthGallery(g.shareSlug, { password: "harbour-2025" }),
      (e) => isKiloApiError(e) && e.status === 401 && e.code === "wrong_password");
    const { token } = await visitor.publicAuthGallery(g.shareSlug, { password: "harbour-2026" });
    const viewer = new KiloClient({ baseUrl, getAccessToken: () => token });
    const open = await viewer.publicGetGallery(g.shareSlug);
    assert.equal(open.assets.length, 5);
    for (const a of open.assets) assert.match(a.previewUrl, /^http/);
    const photo = await fetch(open.assets[0].previewUrl);
    assert.equal(photo.status, 200);
    assert.equal(photo.headers.get("content-type"), "image/jpeg");
    const fav = await viewer.publicFavorite(g.shareSlug, { assetId: ids[0], favorite: true });
    assert.equal(fav.ok, true);
    assert.equal(fav.favoriteCount, 1);
    const comment = await viewer.publicComment(g.shareSlug, { assetId: ids[1], text: "Can we have this one in black and white?" });
    assert.match(comment.commentId, /^[0-9a-f-]{36}$/);
    const after = await viewer.publicGetGallery(g.shareSlug);
    assert.equal(after.assets.find((a) => a.assetId === ids[1]).commentsCount, 1);
  });

  await t.test("export a contact sheet and download it", async () => {
    const ex = await client.createExport(project.id, { preset: "contact_sheet_pdf", assetIds: ids.slice(0, 12) }, { idempotencyKey: crypto.randomUUID() });
    assert.equal(ex.preset, "contact_sheet_pdf");
    const done = await waitFor("the export to end", async () => {
      const e = await client.getExport(ex.id);
      return ["done", "failed", "canceled"].includes(e.status) && e;
    });
    assert.equal(done.status, "done");
    const { url } = await client.exportDownload(ex.id);
    const res = await fetch(url);
    assert.equal(res.status, 200);
    const pdf = new Uint8Array(await res.arrayBuffer());
    assert.equal(new TextDecoder().decode(pdf.slice(0, 5)), "%PDF-");
    assert.ok(seen.some((e) => e.type === "export.updated" && e.exportId === ex.id), "export.updated came on the stream");
  });

  events.close();
  await events.done;
  assert.equal(events.error, undefined);
});
