// The REST API as the pages use it: JSON in and out, the session cookie for
// auth, errors as ApiError carrying the API's stable code.

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super((body && body.message) || `The server answered ${status}.`);
    this.status = status;
    this.code = (body && body.code) || (status === 0 ? 'network_error' : 'http_' + status);
    this.details = (body && body.details) || {};
    this.requestId = body && body.requestId;
    // Seconds to wait, from Retry-After or the body, when the server says.
    this.retryAfter = retryAfter;
  }

  // transient errors are worth retrying after a pause.
  get transient() {
    return this.status === 0 || this.status === 408 || this.status === 429 || this.status >= 500 ||
      this.code === 'idempotency_key_in_progress';
  }
}

// onSignedOut is called when the API says the session is gone.
let onSignedOut = () => {};
export function whenSignedOut(fn) { onSignedOut = fn; }

// api sends one request. body is encoded as JSON; headers are added.
export async function api(method, path, body, headers = {}) {
  const init = { method, headers: { Accept: 'application/json', ...headers }, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, { code: 'network_error', message: 'The server cannot be reached. Check the connection.' });
  }
  if (res.status === 204) return null;
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = { message: text.slice(0, 200) }; }
  }
  if (!res.ok) {
    const ra = Number(res.headers.get('Retry-After'));
    const err = new ApiError(res.status, data, Number.isFinite(ra) && ra > 0 ? ra : data?.details?.retryAfter);
    // The most a rate budget holds at once: asking for more never passes.
    const limit = Number(res.headers.get('X-RateLimit-Limit'));
    if (limit > 0) err.limit = limit;
    if (res.status === 401 && path !== '/v1/session') onSignedOut(err);
    throw err;
  }
  return data;
}

// pages walks a paged list, calling each(items) per page, until the end or
// max items. A page that fails for a transient reason is asked for again
// after a pause, up to retries times: a project of 100,000 photos is 500
// pages, more than the API's rate budget lets through at once.
export async function pages(path, each, { limit = 200, max = Infinity, retries = 8 } = {}) {
  let cursor = '';
  let seen = 0;
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const url = `${path}${sep}limit=${limit}${cursor ? '&cursor=' + encodeURIComponent(cursor) : ''}`;
    let page;
    for (let attempt = 1; ; attempt++) {
      try {
        page = await api('GET', url);
        break;
      } catch (err) {
        if (!(err instanceof ApiError) || !err.transient || attempt > retries) throw err;
        await sleep(waitFor(err, attempt));
      }
    }
    seen += page.items.length;
    await each(page.items);
    cursor = page.pageInfo && page.pageInfo.nextCursor;
    if (!cursor || seen >= max) return;
  }
}

export const session = {
  get: () => api('GET', '/v1/session'),
  signIn: (apiKey) => api('POST', '/v1/session', { apiKey }),
  sendCode: (email) => api('POST', '/v1/auth/login', { email }),
  signInWithCode: (challengeId, code, keep) => api('POST', '/v1/session', { challengeId, code, keep }),
  signOut: () => api('DELETE', '/v1/session'),
};

export function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// backoff is the wait before retry number attempt (1-based): exponential,
// capped, with jitter so that many clients do not retry in step.
export function backoff(attempt, base = 500, cap = 30000) {
  const d = Math.min(cap, base * 2 ** (attempt - 1));
  return d / 2 + Math.random() * (d / 2);
}

// waitFor is how long to wait before retrying after err.
export function waitFor(err, attempt) {
  if (err.retryAfter) return err.retryAfter * 1000 + Math.random() * 1000;
  return backoff(attempt);
}
