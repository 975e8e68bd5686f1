// One detection thread of the pool: it loads the models once, then answers
// the main thread's requests one at a time, {id, body, type, tiles} →
// {id, result} or {id, error: {code, message}}.

import { parentPort, workerData } from 'node:worker_threads';
import { Detector, ImageError, decodeJPEG, decodePPM, MODEL } from './faces.js';

const detector = new Detector(workerData.detector);
try {
  await detector.load();
} catch (err) {
  parentPort.postMessage({ type: 'failed', message: String((err && err.stack) || err) });
  process.exit(1);
}
parentPort.postMessage({ type: 'ready' });

parentPort.on('message', async ({ id, body, type, tiles }) => {
  const start = performance.now();
  try {
    const decode = type === 'image/x-portable-pixmap' ? decodePPM : decodeJPEG;
    const img = decode(Buffer.from(body), workerData.detector.maxMegapixels);
    const { faces, tiles: n } = await detector.detect(img, { tiles });
    parentPort.postMessage({
      id,
      result: { width: img.width, height: img.height, faces, model: MODEL, tiles: n, tookMs: Math.round(performance.now() - start) },
    });
  } catch (err) {
    if (err instanceof ImageError) {
      parentPort.postMessage({ id, error: { code: err.code, message: err.message } });
    } else {
      parentPort.postMessage({ id, error: { code: 'detection_failed', message: `Detection failed: ${err && err.message}` } });
    }
  }
});
