// The face sidecar's costs, printed (`npm run bench` in faces/sidecar/):
//
//   - CPU milliseconds per photo on one thread, for the JPEG decode alone
//     (the baseline: every JPEG request pays it), and for detection with
//     tiles off and on, from a JPEG body and from a PPM one (no decode),
//     over the six demo group photos and the corpus photos without people
//     as 2048-pixel previews;
//   - the resident memory of a sidecar process with 1 and 2 threads after
//     it has served those photos, with tiles off and on.
//
// CPU time, not wall time, so a busy machine skews it less.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Detector, decodeJPEG } from './faces.js';
import { start, detect } from './testlib/sidecar.js';
import { demo, demoPhoto, noPeople, corpusPhoto, decode, encode, shrink } from './testlib/images.js';

const photos = [
  ...demo.map(([name]) => [name, demoPhoto(name)]),
  ...noPeople.map((name) => [name, encode(shrink(decode(corpusPhoto(name)), 2048), 85)]),
];

const cpu = (f) => {
  const c0 = process.cpuUsage();
  const out = f();
  return out instanceof Promise
    ? out.then((r) => [r, elapsed(c0)])
    : [out, elapsed(c0)];
};
const elapsed = (c0) => {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;

const d = new Detector();
await d.load();
// Warm up the JIT and the WASM kernels on one photo.
await d.detect(decodeJPEG(photos[0][1]));

const rows = { decode: [], off: [], auto: [], pixelsOff: [], pixelsAuto: [] };
for (const [, jpeg] of photos) {
  const [img, dec] = cpu(() => decodeJPEG(jpeg));
  rows.decode.push(dec);
  for (const tiles of ['off', 'auto']) {
    const [, det] = await cpu(() => d.detect(img, { tiles }));
    rows[tiles].push(dec + det);
    rows[tiles === 'off' ? 'pixelsOff' : 'pixelsAuto'].push(det);
  }
}
const fmt = (v) => `mean ${mean(v).toFixed(0).padStart(4)} ms, median ${median(v).toFixed(0).padStart(4)} ms`;
const ratio = (v) => `${(mean(v) / mean(rows.decode)).toFixed(1)}× the decode`;
console.log(`CPU per photo on one thread, ${photos.length} photos (6 group photos, ${noPeople.length} previews without people):`);
console.log(`  JPEG decode only (baseline)        ${fmt(rows.decode)}`);
console.log(`  JPEG body, faces without tiles     ${fmt(rows.off)}  (${ratio(rows.off)})`);
console.log(`  JPEG body, faces with tiles        ${fmt(rows.auto)}  (${ratio(rows.auto)})`);
console.log(`  PPM body (pixels), without tiles   ${fmt(rows.pixelsOff)}  (${ratio(rows.pixelsOff)})`);
console.log(`  PPM body (pixels), with tiles      ${fmt(rows.pixelsAuto)}  (${ratio(rows.pixelsAuto)})`);

function rssMB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(status.match(new RegExp(`${k}:\\s+(\\d+)`))[1]);
  return [kb('VmRSS') / 1024, kb('VmHWM') / 1024];
}

console.log('Resident memory of the sidecar process after serving those photos (now / peak):');
for (const workers of ['1', '2']) {
  for (const tiles of ['off', 'auto']) {
    const svc = await start({ ML_WORKERS: workers, ML_TILES: tiles });
    try {
      const [idle] = rssMB(svc.proc.pid);
      await Promise.all(
        [0, 1].map(async (lane) => {
          for (let i = lane; i < photos.length; i += 2) await detect(svc, photos[i][1]);
        }),
      );
      const [now, peak] = rssMB(svc.proc.pid);
      console.log(`  ${workers} thread(s), tiles ${tiles.padEnd(4)} loaded ${idle.toFixed(0)} MB, after ${now.toFixed(0)} MB, peak ${peak.toFixed(0)} MB`);
    } finally {
      await svc.stop();
    }
  }
}
console.log(`node ${process.version}, ${execFileSync('nproc').toString().trim()} cores, load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
