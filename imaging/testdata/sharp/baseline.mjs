// The imaging benchmarks' sharp baseline: makes each file's preview and
// thumbnail the way Immich does (one decode at the preview's size into raw
// pixels, then both JPEGs encoded from those pixels), on one libvips thread.
//
// Started once per benchmark, so Node's and sharp's start-up is not timed.
// The first line on stdin is the job as JSON:
//
//	{"files": [path...], "preview": {"size": 2048, "quality": 82},
//	 "thumbnail": {"size": 320, "quality": 80}, "jpeg": {sharp's jpeg options}}
//
// The script reads every file into memory, makes each file's outputs once
// (to warm up and to check they all decode) and answers one line of JSON:
// {"ready": true, "outputs": [[pw, ph, tw, th]...]} or {"error": "..."}.
// Every further line on stdin makes every file's outputs once more and is
// answered {"seconds": s}. It exits when stdin closes.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

// SHARP_MODULE names another sharp to run (the one built against the
// system's libvips, for the formats npm's prebuilt one cannot read).
const sharp = process.env.SHARP_MODULE
  ? (await import(pathToFileURL(process.env.SHARP_MODULE).href)).default
  : (await import('sharp')).default;

// One libvips thread, and no cache: ingest never sees an image twice, and
// a cache would let rounds after the first skip the work.
sharp.concurrency(1);
sharp.cache(false);

const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

// outputs makes one file's preview and thumbnail and returns their sizes.
async function outputs(buf, job) {
  const { data, info } = await sharp(buf, { failOn: 'error', limitInputPixels: false })
    .rotate()
    .resize(job.preview.size, job.preview.size, { fit: 'inside', withoutEnlargement: true })
    .toColourspace('srgb')
    .raw()
    .toBuffer({ resolveWithObject: true });
  const raw = { raw: { width: info.width, height: info.height, channels: info.channels } };
  const encode = (size, quality) =>
    sharp(data, raw)
      .resize(size, size, { fit: 'inside', withoutEnlargement: true })
      .jpeg({ ...job.jpeg, quality })
      .toBuffer({ resolveWithObject: true });
  const preview = await encode(job.preview.size, job.preview.quality);
  const thumb = await encode(job.thumbnail.size, job.thumbnail.quality);
  return [preview.info.width, preview.info.height, thumb.info.width, thumb.info.height];
}

let job;
let bufs;
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
try {
  for await (const line of lines) {
    if (job === undefined) {
      job = JSON.parse(line);
      bufs = job.files.map((f) => readFileSync(f));
      const sizes = [];
      for (const [i, buf] of bufs.entries()) {
        try {
          sizes.push(await outputs(buf, job));
        } catch (err) {
          // libvips puts its log before the error itself: keep the error.
          const lines = err.message.split('\n').filter((l) => l.trim() !== '');
          throw new Error(`${job.files[i]}: ${lines.at(-1)}`);
        }
      }
      say({ ready: true, outputs: sizes });
      continue;
    }
    const start = process.hrtime.bigint();
    for (const buf of bufs) {
      await outputs(buf, job);
    }
    say({ seconds: Number(process.hrtime.bigint() - start) / 1e9 });
  }
} catch (err) {
  say({ error: err.message });
  process.exitCode = 1;
}
