// The admin page: queues with their sizes and latency (pause, resume),
// failed jobs of every user (retry, delete), batches with failures (retry
// the whole batch), the attestation chain (head, last verify) and the
// scheduled backups (last success, last failure).

import { api, whenSignedOut } from './api.js';
import { h, clear, announce, signedInUser, signInForm, userBar, when, bytes, duration, plural, table } from './ui.js';

const main = document.getElementById('main');
let timers = [];

async function boot() {
  let user = await signedInUser(main);
  whenSignedOut(() => {
    stop();
    announce('Your session has ended; sign in again.', 'error');
    boot();
  });
  if (!user) user = (await signInForm(main, 'Sign in as an administrator: enter your email, and we mail you a code.')).user;
  userBar(document.getElementById('user'), user, () => { stop(); location.reload(); });
  if (!user.isAdmin) {
    clear(main, h('h1', {}, 'Admin'), h('p', { class: 'error', role: 'alert' },
      `${user.email} is not an administrator. This page and Asynqmon are for administrators only.`),
    h('p', {}, h('a', { href: '/' }, 'Back to your projects')));
    return;
  }
  render();
}

function stop() {
  for (const t of timers) clearInterval(t);
  timers = [];
}

function every(ms, fn) {
  fn();
  timers.push(setInterval(fn, ms));
}

function render() {
  document.title = 'Admin · Lightbox';
  const queues = h('div', { id: 'queues' }, h('p', { class: 'muted' }, 'Loading…'));
  const jobs = h('div', { id: 'failed-jobs' }, h('p', { class: 'muted' }, 'Loading…'));
  const batches = h('div', { id: 'failed-batches' }, h('p', { class: 'muted' }, 'Loading…'));
  const chain = h('div', { id: 'chain' }, h('p', { class: 'muted' }, 'Loading…'));
  const backups = h('div', { id: 'backups' }, h('p', { class: 'muted' }, 'Loading…'));
  clear(main,
    h('h1', {}, 'Admin'),
    h('p', {}, 'Operators’ view of every user’s work. For task-level detail (payloads, schedules, servers) open ',
      h('a', { href: '/admin/queues/', id: 'asynqmon-link' }, 'Asynqmon'), '.'),
    h('section', { class: 'card', 'aria-labelledby': 'queues-h' }, h('h2', { id: 'queues-h' }, 'Queues'), queues),
    h('section', { class: 'card', 'aria-labelledby': 'jobs-h' }, h('h2', { id: 'jobs-h' }, 'Failed jobs'), jobs),
    h('section', { class: 'card', 'aria-labelledby': 'batches-h' }, h('h2', { id: 'batches-h' }, 'Batches with failures'), batches),
    h('section', { class: 'card', 'aria-labelledby': 'chain-h' }, h('h2', { id: 'chain-h' }, 'Attestation chain'), chain),
    h('section', { class: 'card', 'aria-labelledby': 'backups-h' }, h('h2', { id: 'backups-h' }, 'Backups'), backups));
  every(5000, () => loadQueues(queues));
  const reloadJobs = () => { loadJobs(jobs, reloadJobs); loadBatches(batches, reloadJobs); };
  every(10000, reloadJobs);
  loadChain(chain);
  every(60000, () => loadBackups(backups));
}

// act runs an action from a button, says how it went and refreshes.
async function act(button, what, fn, after) {
  button.disabled = true;
  try {
    await fn();
    announce(what);
    after && after();
  } catch (err) {
    announce(`${err.message} (${err.code})`, 'error');
    button.disabled = false;
  }
}

async function loadQueues(root) {
  let res;
  try {
    res = await api('GET', '/v1/admin/queues');
  } catch (err) {
    clear(root, h('p', { class: 'error' }, `Queues unavailable: ${err.message}`));
    return;
  }
  const rows = res.items.map((q) => {
    const toggle = h('button', {
      type: 'button', class: 'small', 'data-queue': q.name, 'aria-label': `${q.paused ? 'Resume' : 'Pause'} queue ${q.name}`,
    }, q.paused ? 'Resume' : 'Pause');
    toggle.addEventListener('click', () => act(toggle, `Queue ${q.name} ${q.paused ? 'resumed' : 'paused'}.`,
      () => api('POST', `/v1/admin/queues/${encodeURIComponent(q.name)}/${q.paused ? 'resume' : 'pause'}`), () => loadQueues(root)));
    return [
      h('a', { href: `/admin/queues/queues/${encodeURIComponent(q.name)}` }, q.name),
      h('span', { class: q.paused ? 'state paused' : 'state running' }, q.paused ? '❚❚ Paused' : '▶ Running'),
      q.size.toLocaleString(), q.pending.toLocaleString(), q.active.toLocaleString(), q.scheduled.toLocaleString(),
      q.retry.toLocaleString(), q.archived.toLocaleString(), latency(q.latencyMs),
      `${q.processedToday.toLocaleString()} / ${q.failedToday.toLocaleString()}`, bytes(q.memoryBytes), toggle,
    ];
  });
  clear(root, table(['Queue', 'State', 'Size', 'Pending', 'Active', 'Scheduled', 'Retry', 'Archived', 'Latency', 'Done / failed today', 'Memory', ''], rows));
}

function latency(ms) {
  if (!ms) return '0 s';
  return ms < 1000 ? `${ms} ms` : ms < 120000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60000)} min`;
}

async function loadJobs(root, reload) {
  let res;
  try {
    res = await api('GET', '/v1/admin/jobs?status=failed&limit=100');
  } catch (err) {
    clear(root, h('p', { class: 'error' }, `Failed jobs unavailable: ${err.message}`));
    return;
  }
  if (!res.items.length) {
    clear(root, h('p', { class: 'muted', id: 'no-failed-jobs' }, '✓ No failed jobs.'));
    return;
  }
  const rows = res.items.map((j) => {
    const retry = h('button', { type: 'button', class: 'small', 'data-job': j.id, 'data-action': 'retry', 'aria-label': `Retry job ${j.id}` }, 'Retry');
    retry.addEventListener('click', () => act(retry, `Job ${j.id.slice(0, 8)} queued again.`, () => api('POST', `/v1/admin/jobs/${j.id}/retry`), reload));
    const del = h('button', { type: 'button', class: 'small danger', 'data-job': j.id, 'data-action': 'delete', 'aria-label': `Delete job ${j.id}` }, 'Delete');
    del.addEventListener('click', () => {
      if (!confirm('Delete this failed job? Its task leaves the queue for good; the record stays, marked canceled.')) return;
      act(del, `Job ${j.id.slice(0, 8)} deleted.`, () => api('DELETE', `/v1/admin/jobs/${j.id}`), reload);
    });
    return [
      when(j.updatedAt), j.type, j.ownerEmail, j.projectTitle,
      h('span', { class: 'mono', title: j.assetId || '' }, j.assetFilename || (j.assetId ? j.assetId.slice(0, 8) : '—')),
      j.errorCode ? h('span', {}, h('strong', {}, j.errorCode), ': ', j.error || '') : '',
      String(j.attempt),
      h('span', { class: 'buttons' }, retry, del),
    ];
  });
  clear(root,
    h('p', { class: 'muted' }, res.pageInfo.nextCursor ? 'The newest 100 failed jobs:' : `${plural(res.items.length, 'failed job')}:`),
    table(['Failed', 'Type', 'User', 'Project', 'Asset', 'Error', 'Attempts', ''], rows));
}

async function loadBatches(root, reload) {
  let res;
  try {
    res = await api('GET', '/v1/admin/batches?limit=50');
  } catch (err) {
    clear(root, h('p', { class: 'error' }, `Batches unavailable: ${err.message}`));
    return;
  }
  if (!res.items.length) {
    clear(root, h('p', { class: 'muted' }, '✓ No batch has failed jobs.'));
    return;
  }
  const rows = res.items.map((b) => {
    const retry = h('button', { type: 'button', class: 'small', 'data-batch': b.id, 'aria-label': `Retry the failed jobs of batch ${b.id}` }, 'Retry batch');
    retry.addEventListener('click', () => act(retry, `Failed jobs of batch ${b.id.slice(0, 8)} queued again.`,
      () => api('POST', `/v1/admin/batches/${b.id}/retry`), reload));
    return [when(b.createdAt), b.kind, b.ownerEmail, b.projectTitle, b.status,
      `${b.completed.toLocaleString()} done, ${b.failed.toLocaleString()} failed of ${b.total.toLocaleString()}`, retry];
  });
  clear(root, table(['Started', 'Kind', 'User', 'Project', 'Status', 'Jobs', ''], rows));
}

async function loadChain(root) {
  let res;
  try {
    res = await api('GET', '/v1/admin/chain');
  } catch (err) {
    clear(root, h('p', { class: 'error' }, `The chain is unavailable: ${err.message}`));
    return;
  }
  const { head, keys, queue, lastVerify: v } = res;
  const verify = h('button', { type: 'button', id: 'verify' }, 'Verify the whole chain now');
  verify.addEventListener('click', () => act(verify, 'Chain verified.', async () => {
    verify.textContent = 'Verifying…';
    await api('POST', '/v1/admin/chain/verify');
  }, () => loadChain(root)));
  const facts = [
    ['Head', `seq ${head.seq.toLocaleString()}`],
    ['Transaction', head.txId || '—'],
    ['Content id', head.cid || '—'],
    ['Moved', when(head.updatedAt)],
    ['Signing key', keys.hex],
    ['Retired keys', keys.retired.length ? keys.retired.map((k) => k.hex).join(', ') : 'none'],
    ['Last flush', head.lastBatchSize ? `${plural(head.lastBatchSize, 'item')} in ${Math.round(head.lastBatchMs)} ms` : '—'],
    ['Queue', `${queue.pending} pending, ${queue.signing} signing, ${queue.failed} failed, ${queue.abandoned} abandoned, ${queue.attested.toLocaleString()} attested`],
    ['Last verify', v
      ? `${v.ok ? '✓ intact' : '✕ BROKEN'}: ${plural(v.checked, 'record')} checked ${when(v.at)} by ${v.by} in ${v.durationMs} ms` +
        (v.firstBroken ? ` — first broken at seq ${v.firstBroken.seq}: ${v.firstBroken.reason} (${v.firstBroken.message})` : '')
      : 'never run from this page'],
  ];
  clear(root, h('dl', { class: 'facts mono' }, facts.map(([k, val]) => [h('dt', {}, k), h('dd', {}, val)])), verify);
}

async function loadBackups(root) {
  let res;
  try {
    res = await api('GET', '/v1/admin/backups');
  } catch (err) {
    clear(root, h('p', { class: 'error' }, `Backups unavailable: ${err.message}`));
    return;
  }
  if (!res.schedule) {
    clear(root, h('p', { class: 'muted' }, 'Backups are off (BACKUP_SCHEDULE is not set).'));
    return;
  }
  const { lastSuccess: ok, lastFailure: bad } = res;
  const facts = [
    ['Schedule', [h('span', { class: 'mono' }, res.schedule), ' (UTC)']],
    ['Location', h('span', { class: 'mono' }, res.location || '—')],
    ['Keeps', plural(res.keep, 'complete backup')],
  ];
  // Only the newest run can be under way: one whose worker died stays
  // "running" for good, and the next run is listed before it.
  const current = res.runs[0];
  const running = current && current.status === 'running';
  if (running) facts.push(['Running', `started ${when(current.startedAt)}`]);
  if (!ok && !bad) {
    facts.push(['Last backup', running ? 'No backup has finished yet.' : 'No backup has run yet.']);
  } else {
    facts.push(['Last success', ok
      ? `✓ ${when(ok.finishedAt)}: ${bytes(ok.bytes)} in ${duration((Date.parse(ok.finishedAt) - Date.parse(ok.startedAt)) / 1000)}` +
        (ok.backupId ? ` (backup ${ok.backupId})` : '')
      : 'none yet']);
    // A failure since the last success is one still to see to.
    const unresolved = bad && (!ok || Date.parse(bad.finishedAt) > Date.parse(ok.finishedAt));
    facts.push(['Last failure', bad ? h('span', { class: unresolved ? 'error' : '' }, `✕ ${when(bad.finishedAt)}: ${bad.error}`) : 'none']);
  }
  clear(root, h('dl', { class: 'facts' }, facts.map(([k, val]) => [h('dt', {}, k), h('dd', {}, val)])));
}

boot().catch(() => {}); // signedInUser has said what went wrong
