// One detection thread of the pool: it loads the models once, then answers
// the main thread's requests one at a time, {id, body, type, tiles} →
// {id, result, memory} or {id, error: {code, message}, memory}, where memory
// is the bytes the thread holds after it (its V8 heap and what lies outside
// it, the WASM memory included; sent with `ready` too), for the pool to
// replace a thread grown too large.

import { parentPort, workerData } from 'node:worker_threads';
import { Detector, ImageError, decodeJPEG, decodePPM, MODEL } from './faces.js';

function memory() {
  const m = process.memoryUsage();
  return m.heapTotal + m.external;
}

const detector = new Detector(workerData.detector);
try {
  await detector.load();
} catch (err) {
  parentPort.postMessage({ type: 'failed', message: String((err && err.stack) || err) });
  process.exit(1);
}
parentPort.postMessage({ type: 'ready', memory: memory() });

parentPort.on('message', async ({ id, body, type, tiles }) => {
  const start = performance.now();
  try {
    const decode = type === 'image/x-portable-pixmap' ? decodePPM : decodeJPEG;
    const img = decode(Buffer.from(body), workerData.detector.maxMegapixels);
    const { faces, tiles: n } = await detector.detect(img, { tiles });
    parentPort.postMessage({
      id,
      result: { width: img.width, height: img.height, faces, model: MODEL, tiles: n, tookMs: Math.round(performance.now() - start) },
      memory: memory(),
    });
  } catch (err) {
    if (err instanceof ImageError) {
      parentPort.postMessage({ id, error: { code: err.code, message: err.message }, memory: memory() });
    } else {
      parentPort.postMessage({ id, error: { code: 'detection_failed', message: `Detection failed: ${err && err.message}` }, memory: memory() });
    }
  }
});
