// start runs server.js as its own process on a free loopback port, the way
// the scripts run it, with a secret of its own (env may set ML_SECRET or
// ML_AUTH instead), and waits (minutes at most: the machine may be busy)
// until its models are loaded.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const server = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'server.js');

export async function start(env = {}, { deadlineMs = 180000 } = {}) {
  const secret = 'ML_SECRET' in env || 'ML_AUTH' in env ? env.ML_SECRET : randomBytes(32).toString('hex');
  const proc = spawn(process.execPath, [server], {
    env: { ...process.env, ML_HOST: '127.0.0.1', ML_PORT: '0', ML_SECRET: secret, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[\d.]+:\d+)/);
      if (m) resolve(m[1]);
    });
    exited.then((code) => reject(new Error(`the face service exited (${code}) before listening:\n${stderr}`)));
  });
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const res = await fetch(`${url}/healthz`).catch(() => null);
    if (res && res.status === 200) break;
    if (proc.exitCode !== null) throw new Error(`the face service exited (${proc.exitCode}):\n${stderr}`);
    if (Date.now() > deadline) throw new Error(`the face service did not load its models in ${deadlineMs} ms:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    secret,
    proc,
    stderr: () => stderr,
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}

// detect posts a JPEG to svc (what start returns) with its secret, unless
// secret says otherwise, and returns {status, headers, body}. A connection
// the service closed while this process was blocked (a test decoding
// photos on a busy machine) is tried once more on a new one: detection is
// safe to repeat. Other network errors fail with their cause spelled out,
// since fetch's own message is only "fetch failed".
export async function detect(svc, jpeg, { query = '', type = 'image/jpeg', secret = svc.secret } = {}) {
  const { url } = svc;
  const headers = { 'Content-Type': type };
  if (secret) headers.Authorization = `Bearer ${secret}`;
  const post = () => fetch(`${url}/v1/faces${query}`, { method: 'POST', headers, body: jpeg });
  let res;
  try {
    res = await post().catch((err) => {
      if (err?.cause?.code === 'UND_ERR_SOCKET' || err?.cause?.code === 'ECONNRESET') return post();
      throw err;
    });
  } catch (err) {
    throw new Error(`POST ${url}/v1/faces${query}: ${err.message}: ${err.cause?.code ?? ''} ${err.cause?.message ?? err.cause ?? ''}`, { cause: err });
  }
  return { status: res.status, headers: res.headers, body: await res.json() };
}
