// Test images: the group photos shipped in @vladmandic/face-api's demo/
// folder (read from node_modules; their licence does not let us copy them),
// the shared corpus beside the repository, and small pure-JS edits of them
// (shrink to a preview, mirror, collage) made with jpeg-js.

import { createRequire } from 'node:module';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import jpeg from 'jpeg-js';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

export const demoDir = path.join(path.dirname(require.resolve('@vladmandic/face-api/package.json')), 'demo');

// The six group photos and how many faces each holds (counted by eye).
export const demo = [
  ['sample1.jpg', 3],
  ['sample2.jpg', 3],
  ['sample3.jpg', 3],
  ['sample4.jpg', 4],
  ['sample5.jpg', 5],
  ['sample6.jpg', 4],
];

export function demoPhoto(name) {
  return readFileSync(path.join(demoDir, name));
}

export const corpusDir = process.env.LIGHTBOX_CORPUS || path.resolve(here, '..', '..', '..', '..', 'shared', 'corpus');

// The corpus's photographs without people (its README lists them; none
// shows a face: kleiber-6028x3391.jpg has a blurred passer-by's legs).
export const noPeople = [
  'blinds.jpg',
  'bythewater-2560x1600.jpg',
  'coldripple-2560x1600.jpg',
  'colorfulcups-2560x1600.jpg',
  'darkesthour-2560x1600.jpg',
  'dune.jpg',
  'elephants-3840x2160-progressive.jpg',
  'fallenleaf-2560x1600.jpg',
  'kite-2560x1600.jpg',
  'kleiber-6028x3391.jpg',
  'path-2560x1600.jpg',
  'storm.jpg',
  'wood.jpg',
];

export function corpusPhoto(name) {
  const file = path.join(corpusDir, 'photos', name);
  if (!existsSync(file)) throw new Error(`test corpus not found at ${file} (set LIGHTBOX_CORPUS)`);
  return readFileSync(file);
}

// decode returns {width, height, data: RGB}.
export function decode(buf) {
  const img = jpeg.decode(buf, { useTArray: true, formatAsRGBA: false, maxMemoryUsageInMB: 1024 });
  return { width: img.width, height: img.height, data: img.data };
}

export function encode(img, quality = 85) {
  const rgba = Buffer.alloc(img.width * img.height * 4);
  for (let i = 0, j = 0; i < img.data.length; i += 3, j += 4) {
    rgba[j] = img.data[i];
    rgba[j + 1] = img.data[i + 1];
    rgba[j + 2] = img.data[i + 2];
    rgba[j + 3] = 255;
  }
  return jpeg.encode({ width: img.width, height: img.height, data: rgba }, quality).data;
}

// ppm is img as a binary PPM, the raw pixels a caller that decoded the
// image already may send.
export function ppm(img) {
  return Buffer.concat([Buffer.from(`P6\n${img.width} ${img.height}\n255\n`), Buffer.from(img.data)]);
}

// shrink scales img down by averaging so that its long side is at most
// long pixels, as the stored preview is.
export function shrink(img, long) {
  const f = Math.max(img.width, img.height) / long;
  if (f <= 1) return img;
  const w = Math.round(img.width / f);
  const h = Math.round(img.height / f);
  const out = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) {
    const y0 = Math.floor(y * f);
    const y1 = Math.max(y0 + 1, Math.min(img.height, Math.floor((y + 1) * f)));
    for (let x = 0; x < w; x++) {
      const x0 = Math.floor(x * f);
      const x1 = Math.max(x0 + 1, Math.min(img.width, Math.floor((x + 1) * f)));
      let r = 0;
      let g = 0;
      let b = 0;
      for (let yy = y0; yy < y1; yy++) {
        for (let xx = x0; xx < x1; xx++) {
          const i = (yy * img.width + xx) * 3;
          r += img.data[i];
          g += img.data[i + 1];
          b += img.data[i + 2];
        }
      }
      const n = (y1 - y0) * (x1 - x0);
      const o = (y * w + x) * 3;
      out[o] = r / n;
      out[o + 1] = g / n;
      out[o + 2] = b / n;
    }
  }
  return { width: w, height: h, data: out };
}

// mirror flips img left to right.
export function mirror(img) {
  const out = new Uint8Array(img.data.length);
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const from = (y * img.width + x) * 3;
      const to = (y * img.width + img.width - 1 - x) * 3;
      out[to] = img.data[from];
      out[to + 1] = img.data[from + 1];
      out[to + 2] = img.data[from + 2];
    }
  }
  return { width: img.width, height: img.height, data: out };
}

// collage lays imgs out on a grey width × height canvas in cols columns,
// each shrunk to fit a cell `fill` of its size: a group seen from afar.
export function collage(imgs, width, height, cols, fill) {
  const rows = Math.ceil(imgs.length / cols);
  const cw = Math.floor(width / cols);
  const ch = Math.floor(height / rows);
  const out = new Uint8Array(width * height * 3).fill(128);
  imgs.forEach((img, i) => {
    const s = shrink(img, Math.floor(Math.min(cw / img.width, ch / img.height) * fill * Math.max(img.width, img.height)));
    const ox = (i % cols) * cw;
    const oy = Math.floor(i / cols) * ch;
    for (let y = 0; y < s.height; y++) {
      out.set(s.data.subarray(y * s.width * 3, (y + 1) * s.width * 3), ((oy + y) * width + ox) * 3);
    }
  });
  return { width, height, data: out };
}
