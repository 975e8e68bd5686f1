// Face detection on one decoded image: BlazeFace finds the faces, the face
// mesh and iris models place landmarks on each, and from those come eye
// openness and head angles. Nothing here describes or recognises a face:
// the description (embedding) model is never loaded.
//
// The models are read from the npm packages in node_modules, never from the
// network, and TensorFlow.js runs on its WASM backend (no native code).

import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import jpeg from 'jpeg-js';

const require = createRequire(import.meta.url);

// The package's `exports` map lists its WASM build under keys that lack the
// leading "./", so Node refuses them: it is loaded by its path instead.
const humanDir = path.resolve(path.dirname(require.resolve('@vladmandic/human')), '..');
const H = require(path.join(humanDir, 'dist', 'human.node-wasm.js'));
const tf = require('@tensorflow/tfjs-core');
const wasmDir = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'));

export const HUMAN_VERSION = require(path.join(humanDir, 'package.json')).version;
export const MODEL = `human-${HUMAN_VERSION}:blazeface+facemesh+iris`;

// Registers a loader for file:// model URLs: TensorFlow.js reads those only
// through tfjs-node, which this build does not use. Only paths inside the
// models folder are served.
let routed = false;
function routeFileURLs(modelsDir) {
  if (routed) return;
  routed = true;
  tf.io.registerLoadRouter((url) => {
    if (typeof url !== 'string' || !url.startsWith('file://')) return null;
    const file = path.resolve(new URL(url).pathname);
    if (!file.startsWith(modelsDir + path.sep)) return null;
    return {
      load: async () => {
        const json = JSON.parse(await readFile(file, 'utf8'));
        return tf.io.getModelArtifactsForJSON(json, async (manifest) => {
          const specs = [];
          const parts = [];
          for (const group of manifest) {
            specs.push(...group.weights);
            for (const p of group.paths) parts.push(await readFile(path.resolve(path.dirname(file), p)));
          }
          const all = Buffer.concat(parts);
          return [specs, all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength)];
        });
      },
    };
  });
}

// config turns off everything but the face detector, mesh and iris, and
// every cache meant for video frames: each image stands alone.
function config(opts) {
  const modelsDir = path.join(humanDir, 'models');
  return {
    backend: 'wasm',
    wasmPath: wasmDir + '/dist/',
    wasmPlatformFetch: false,
    modelBasePath: pathToFileURL(modelsDir).href + '/',
    debug: false,
    async: false,
    warmup: 'none',
    cacheModels: false,
    cacheSensitivity: 0,
    skipAllowed: false,
    deallocate: false,
    filter: { enabled: false },
    face: {
      enabled: true,
      detector: {
        rotation: false,
        maxDetected: opts.maxFaces,
        minConfidence: opts.minScore,
        iouThreshold: 0.1,
        skipFrames: 0,
        skipTime: 0,
        return: false,
      },
      mesh: { enabled: true },
      iris: { enabled: true },
      attention: { enabled: false },
      emotion: { enabled: false },
      description: { enabled: false },
      antispoof: { enabled: false },
      liveness: { enabled: false },
    },
    body: { enabled: false },
    hand: { enabled: false },
    object: { enabled: false },
    gesture: { enabled: false },
    segmentation: { enabled: false },
  };
}

export const defaults = {
  // Faces a photo may hold before the rest are left out.
  maxFaces: 50,
  // The detector's score, and the mesh's own, below which a face is
  // dropped. On the test photos real faces score 0.5 or more on both, even
  // in profile, and the face-like patterns of photos without people at most
  // 0.26 on the mesh.
  minScore: 0.4,
  // Tiles: an image whose long side is at least tileMinSide pixels is also
  // searched in overlapping square tiles of tileFraction of its long side
  // (six on a 3:2 frame), where faces down to about 3 % of the long side
  // are big enough for the detector (see detect).
  tileMinSide: 1000,
  tileFraction: 0.44,
  tileOverlap: 0.25,
  // Boxes from the whole frame and the tiles that overlap this much are one face.
  mergeIoU: 0.3,
  // Pixels a JPEG may decode to. The decoder holds about 16 bytes a pixel
  // while it works: 16 MP is some 320 MB; a 2048-pixel preview is 4 MP.
  maxMegapixels: 16,
};

export class ImageError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// decodeJPEG returns {width, height, data: RGB bytes} or throws an ImageError.
export function decodeJPEG(buf, maxMegapixels = defaults.maxMegapixels) {
  if (buf.length < 4 || buf[0] !== 0xff || buf[1] !== 0xd8) {
    throw new ImageError('bad_image', 'The body is not a JPEG.');
  }
  let img;
  try {
    img = jpeg.decode(buf, {
      useTArray: true,
      formatAsRGBA: false,
      maxResolutionInMP: maxMegapixels,
      maxMemoryUsageInMB: Math.ceil(maxMegapixels * 16 + 64),
      tolerantDecoding: true,
    });
  } catch (err) {
    const msg = String(err && err.message);
    if (/maxResolutionInMP|maxMemoryUsageInMB/.test(msg)) {
      throw new ImageError('too_many_pixels', `The JPEG has more than ${maxMegapixels} megapixels.`);
    }
    throw new ImageError('bad_image', `The JPEG does not decode: ${msg}`);
  }
  if (!img.width || !img.height) throw new ImageError('bad_image', 'The JPEG has no pixels.');
  return { width: img.width, height: img.height, data: img.data };
}

// decodePPM reads a binary PPM (P6, 8 bits): the raw RGB pixels a caller
// that has decoded the image already sends, so that they are not decoded
// twice. It returns {width, height, data: RGB bytes} or throws an ImageError.
export function decodePPM(buf, maxMegapixels = defaults.maxMegapixels) {
  // The header: "P6", width, height and maxval, separated by whitespace or
  // comments, then one whitespace byte before the pixels.
  const fields = [];
  let at = 0;
  while (fields.length < 4 && at < Math.min(buf.length, 1024)) {
    const c = buf[at];
    if (c === 0x23) {
      while (at < buf.length && buf[at] !== 0x0a) at++;
    } else if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) {
      at++;
    } else {
      const from = at;
      while (at < buf.length && buf[at] > 0x20 && buf[at] !== 0x23) at++;
      fields.push(buf.toString('latin1', from, at));
    }
  }
  const [magic, w, h, maxval] = fields;
  const width = Number(w);
  const height = Number(h);
  if (magic !== 'P6' || fields.length < 4 || !/^\d+$/.test(w) || !/^\d+$/.test(h) || maxval !== '255') {
    throw new ImageError('bad_image', 'The body is not a binary PPM (P6) of 8-bit RGB.');
  }
  if (!width || !height) throw new ImageError('bad_image', 'The PPM has no pixels.');
  if (width * height > maxMegapixels * 1e6) {
    throw new ImageError('too_many_pixels', `The PPM has more than ${maxMegapixels} megapixels.`);
  }
  const start = at + 1;
  if (buf.length - start !== width * height * 3) {
    throw new ImageError('bad_image', `The PPM holds ${buf.length - start} bytes of pixels, not ${width * height * 3}.`);
  }
  return { width, height, data: new Uint8Array(buf.buffer, buf.byteOffset + start, width * height * 3) };
}

export class Detector {
  constructor(opts = {}) {
    this.opts = { ...defaults, ...opts };
    this.human = new H.Human(config(this.opts));
  }

  async load() {
    routeFileURLs(path.join(humanDir, 'models'));
    await this.human.load();
    await this.human.tf.ready();
    if (this.human.tf.getBackend() !== 'wasm') {
      throw new Error(`TensorFlow.js runs on ${this.human.tf.getBackend()}, not wasm`);
    }
  }

  // detect finds the faces in img ({width, height, data: RGB}).
  //
  // BlazeFace sees the image shrunk to 256 pixels, so on a large frame a
  // face under about 6 % of the long side is often missed. With tiles on
  // ('auto'), such an image is searched again in overlapping tiles with the
  // detector alone; each face found there and not already known is then
  // measured (mesh, iris) on a crop around it. The detector is cheap and
  // the mesh and iris cost per face, so a frame whose faces were all found
  // pays only for the tiles' detector runs.
  async detect(img, { tiles = 'auto' } = {}) {
    const { width, height } = img;
    const faces = await this.measure(img, { x: 0, y: 0, w: width, h: height });
    const regions = tiles === 'off' ? [] : tileRegions(width, height, this.opts);
    let boxes = [];
    for (const r of regions) boxes = boxes.concat(await this.boxes(img, r));
    for (const b of merge(boxes, this.opts.mergeIoU)) {
      if (faces.some((f) => same(f.box, b.box, this.opts.mergeIoU))) continue;
      const near = (await this.measure(img, cropAround(b.box, width, height))).filter((f) =>
        same(f.box, b.box, this.opts.mergeIoU),
      );
      const best = near.sort((p, q) => q.score - p.score)[0];
      if (best && !faces.some((f) => same(f.box, best.box, this.opts.mergeIoU))) faces.push(best);
    }
    faces.sort((a, b) => a.box.x - b.box.x || a.box.y - b.box.y);
    for (const f of faces) delete f.meshScore;
    return { faces, tiles: regions.length };
  }

  // measure runs the whole pipeline (detector, mesh, iris) on region r of
  // img and returns the faces in the whole image's fractions.
  async measure(img, r) {
    const res = await this.onRegion(img, r, { mesh: { enabled: true }, iris: { enabled: true } });
    return res
      .map((f) => describe(f, r, img.width, img.height))
      .filter((f) => f && f.meshScore !== undefined && f.meshScore >= this.opts.minScore);
  }

  // boxes runs the detector alone on region r of img. The region is
  // shrunk here to the detector's input, as the detector would shrink it
  // (resizeBilinear), so that its tensor is 256 pixels a side rather than
  // the tile's 900 or so: making and copying that tensor cost as much as
  // the detector's own run.
  async boxes(img, r) {
    const side = this.detectorSize();
    const small = side < r.w && side < r.h;
    const res = await this.onRegion(img, r, { mesh: { enabled: false }, iris: { enabled: false } }, small ? side : 0);
    const sx = small ? r.w / side : 1;
    const sy = small ? r.h / side : 1;
    return res
      .map((f) => describe({ ...f, box: [f.box[0] * sx, f.box[1] * sy, f.box[2] * sx, f.box[3] * sy] }, r, img.width, img.height))
      .filter(Boolean);
  }

  // detectorSize is the side of BlazeFace's square input.
  detectorSize() {
    const shape = this.human.models.models.blazeface?.inputs?.[0]?.shape;
    return shape && shape[2] > 0 ? shape[2] : 256;
  }

  // onRegion runs Human on region r of img, shrunk to side × side pixels
  // when side is not 0.
  async onRegion(img, r, face, side = 0) {
    const t = side ? shrunkTensor(img, r, side) : regionTensor(img, r);
    try {
      // Human keeps the config it is given, so each call names both.
      const res = await this.human.detect(t, { face });
      if (res.error) throw new Error(`detection failed: ${res.error}`);
      return res.face;
    } finally {
      t.dispose();
    }
  }
}

// regionTensor copies region r of img's RGB bytes into a float tensor.
// Copying rows here costs a few milliseconds, where tf.slice on the WASM
// backend took 50 or more for a tile; the typed array's own conversion is
// several times faster than Float32Array.from.
function regionTensor(img, r) {
  const whole = r.x === 0 && r.y === 0 && r.w === img.width && r.h === img.height;
  let out;
  if (whole) {
    out = new Float32Array(img.data);
  } else {
    out = new Float32Array(r.w * r.h * 3);
    const row = r.w * 3;
    for (let y = 0; y < r.h; y++) {
      const from = ((r.y + y) * img.width + r.x) * 3;
      out.set(img.data.subarray(from, from + row), y * row);
    }
  }
  return tf.tensor3d(out, [r.h, r.w, 3], 'float32');
}

// shrunkTensor is region r of img resized to side × side pixels the way
// tf.image.resizeBilinear does by default (no corner alignment, source
// position = destination × scale), which is what the detector does to
// its input: the detector sees the same pixels.
function shrunkTensor(img, r, side) {
  const out = new Float32Array(side * side * 3);
  const fy = r.h / side;
  const fx = r.w / side;
  const x0s = new Int32Array(side);
  const x1s = new Int32Array(side);
  const dxs = new Float32Array(side);
  for (let x = 0; x < side; x++) {
    const sx = x * fx;
    x0s[x] = Math.floor(sx);
    x1s[x] = Math.min(x0s[x] + 1, r.w - 1);
    dxs[x] = sx - x0s[x];
  }
  const data = img.data;
  for (let y = 0; y < side; y++) {
    const sy = y * fy;
    const y0 = Math.floor(sy);
    const y1 = Math.min(y0 + 1, r.h - 1);
    const dy = sy - y0;
    const row0 = ((r.y + y0) * img.width + r.x) * 3;
    const row1 = ((r.y + y1) * img.width + r.x) * 3;
    let o = y * side * 3;
    for (let x = 0; x < side; x++) {
      const a = x0s[x] * 3;
      const b = x1s[x] * 3;
      const dx = dxs[x];
      for (let c = 0; c < 3; c++) {
        const top = data[row0 + a + c] + (data[row0 + b + c] - data[row0 + a + c]) * dx;
        const bottom = data[row1 + a + c] + (data[row1 + b + c] - data[row1 + a + c]) * dx;
        out[o++] = top + (bottom - top) * dy;
      }
    }
  }
  return tf.tensor3d(out, [side, side, 3], 'float32');
}

// cropAround is a square region three times the size of box (fractions),
// at least 256 pixels, inside the image: enough context for the detector
// to find the face again and for the mesh to fit it.
function cropAround(box, width, height) {
  const side = Math.min(width, height, Math.max(256, Math.round(3 * Math.max(box.w * width, box.h * height))));
  const cx = (box.x + box.w / 2) * width;
  const cy = (box.y + box.h / 2) * height;
  const x = Math.min(Math.max(0, Math.round(cx - side / 2)), width - side);
  const y = Math.min(Math.max(0, Math.round(cy - side / 2)), height - side);
  return { x, y, w: side, h: side };
}

// tileRegions cuts a large image into a grid of overlapping squares.
export function tileRegions(width, height, opts = defaults) {
  if (Math.max(width, height) < opts.tileMinSide) return [];
  const side = Math.min(Math.round(opts.tileFraction * Math.max(width, height)), width, height);
  const axis = (len) => {
    if (len <= side) return [0];
    const step = side * (1 - opts.tileOverlap);
    const n = Math.ceil((len - side) / step) + 1;
    const stride = (len - side) / (n - 1);
    return Array.from({ length: n }, (_, i) => Math.round(i * stride));
  };
  const out = [];
  for (const y of axis(height)) for (const x of axis(width)) out.push({ x, y, w: side, h: side });
  return out;
}

const round = (v, d = 4) => Math.round(v * 10 ** d) / 10 ** d;
const deg = (rad) => round((rad * 180) / Math.PI, 1);
const dist = (a, b) => Math.hypot(a[0] - b[0], a[1] - b[1]);

// openness is the eyelid gap over the height of the eye's region, the
// measure of Human's own blink gesture, taken along the face rather than
// the image's vertical so that a tilted head reads the same. Open eyes
// read about 0.25–0.45, closed ones under 0.15.
function openness(mesh, upper, lower, top, bottom) {
  const span = dist(mesh[top], mesh[bottom]);
  if (!(span > 0)) return undefined;
  return round(dist(mesh[upper], mesh[lower]) / span, 3);
}

// describe turns one of Human's faces, found in region r, into the API's
// shape in fractions of the whole image. Left and right are the person's.
function describe(f, r, width, height) {
  const m = f.mesh;
  const meshed = Array.isArray(m) && m.length >= 468;
  // Human's box is the detector's, enlarged by half to hold the whole head
  // for the mesh; the mesh's own extent is the face, forehead to chin.
  let [bx, by, bw, bh] = f.box;
  if (meshed) {
    const xs = m.slice(0, 468).map((p) => p[0]);
    const ys = m.slice(0, 468).map((p) => p[1]);
    bx = Math.min(...xs);
    by = Math.min(...ys);
    bw = Math.max(...xs) - bx;
    bh = Math.max(...ys) - by;
  }
  const x0 = Math.max(0, r.x + bx);
  const y0 = Math.max(0, r.y + by);
  const x1 = Math.min(width, r.x + bx + bw);
  const y1 = Math.min(height, r.y + by + bh);
  if (x1 <= x0 || y1 <= y0) return null;
  const pt = (p) => ({ x: round((r.x + p[0]) / width), y: round((r.y + p[1]) / height) });
  const face = {
    box: { x: round(x0 / width), y: round(y0 / height), w: round((x1 - x0) / width), h: round((y1 - y0) / height) },
    score: round(f.boxScore ?? f.score, 3),
  };
  if (meshed) {
    face.meshScore = round(f.faceScore ?? f.score, 3);
    const mid = (a, b) => [(m[a][0] + m[b][0]) / 2, (m[a][1] + m[b][1]) / 2];
    // With iris, Human appends the pupils: 468 the person's left (beside
    // the eye corners 362 and 263), 473 the right (beside 33 and 133).
    const irises = m.length >= 478;
    face.landmarks = {
      leftEye: pt(irises ? m[468] : mid(362, 263)),
      rightEye: pt(irises ? m[473] : mid(33, 133)),
      nose: pt(m[1]),
      mouth: pt(mid(13, 14)),
    };
    const left = openness(m, 386, 374, 443, 450);
    const right = openness(m, 159, 145, 223, 230);
    if (left !== undefined && right !== undefined) face.eyeOpenness = { left, right };
  }
  const a = f.rotation && f.rotation.angle;
  if (a) face.headAngles = { yaw: deg(a.yaw), pitch: deg(a.pitch), roll: deg(a.roll) };
  return face;
}

function iou(a, b) {
  const x0 = Math.max(a.x, b.x);
  const y0 = Math.max(a.y, b.y);
  const x1 = Math.min(a.x + a.w, b.x + b.w);
  const y1 = Math.min(a.y + a.h, b.y + b.h);
  const inter = Math.max(0, x1 - x0) * Math.max(0, y1 - y0);
  const union = a.w * a.h + b.w * b.h - inter;
  return union > 0 ? inter / union : 0;
}

// merge keeps, of the faces that overlap by more than threshold, the one
// with the best score, so a face seen whole and in a tile counts once.
// A face cut by a tile's edge scores lower than the whole one.
export function merge(faces, threshold = defaults.mergeIoU) {
  const sorted = [...faces].sort((a, b) => b.score - a.score);
  const kept = [];
  for (const f of sorted) {
    if (!kept.some((k) => same(k.box, f.box, threshold))) kept.push(f);
  }
  return kept.sort((a, b) => a.box.x - b.box.x || a.box.y - b.box.y);
}

// same reports whether boxes a and b are one face: they overlap by more
// than threshold IoU, or most of either lies within the other (a tile's
// edge can cut a face into a smaller box that overlaps the whole one by
// little IoU).
function same(a, b, threshold) {
  return iou(a, b) > threshold || inside(a, b) || inside(b, a);
}

// inside reports whether most of a lies within b.
function inside(a, b) {
  const x0 = Math.max(a.x, b.x);
  const y0 = Math.max(a.y, b.y);
  const x1 = Math.min(a.x + a.w, b.x + b.w);
  const y1 = Math.min(a.y + a.h, b.y + b.h);
  const inter = Math.max(0, x1 - x0) * Math.max(0, y1 - y0);
  return a.w * a.h > 0 && inter / (a.w * a.h) > 0.6;
}
