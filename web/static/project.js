// A project: the uploader with its three phases and per-file list, the
// photo grid to cull in (grid.js), moments and duplicate groups, and a
// photo's details. A project's model and uploader outlive the view, so an
// upload goes on while the user looks elsewhere, and coming back shows the
// same state (rebuilt from the API after a reload).

import { api, pages } from './api.js';
import { h, clear, announce, bytes, duration, when, plural, table } from './ui.js';
import { ProjectModel, STAGES, ICONS, stageOf, UPLOAD_ERRORS, cameraName } from './model.js';
import { Uploader, ACCEPT, FORMAT_NAMES } from './uploader.js';
import { VirtualList } from './vlist.js';
import { Thumbs } from './images.js';
import { photosView } from './grid.js';
import { reviewView, reviewGroup } from './groups.js';
import { deliverView } from './deliver.js';
import { followFaces } from './facenote.js';
import { exposureFacts } from './exif.js';
import './edit.js';

const open = new Map(); // project id → {model, uploader}
let current = null; // the project on screen: {id, model, teardown: [fn]}

window.addEventListener('beforeunload', (e) => {
  for (const p of open.values()) {
    if (p.uploader && p.uploader.busy) {
      e.preventDefault();
      e.returnValue = '';
      return;
    }
  }
});

function projectState(id) {
  let p = open.get(id);
  if (!p) {
    p = { model: new ProjectModel(id), uploader: null };
    open.set(id, p);
  }
  return p;
}

// The page's header holds the project's name and tabs; main says which
// tab it shows, for the styles (the photos and the review take the whole
// width).
const context = () => document.getElementById('context');

export function leaveProject() {
  clear(context());
  delete document.getElementById('main').dataset.view;
  if (!current) return;
  for (const fn of current.teardown) fn();
  current.model.stop();
  current = null;
}

const TABS = [['upload', 'Upload'], ['photos', 'Photos'], ['groups', 'Moments and duplicates'], ['review', 'Review groups'],
  ['deliver', 'Deliver']];

export async function showProject(main, id, tab) {
  if (current && current.id !== id) leaveProject();
  let project;
  try {
    project = await api('GET', `/v1/projects/${id}`);
  } catch (err) {
    leaveProject();
    clear(main, h('h1', {}, 'Project'), h('p', { class: 'error', role: 'alert' },
      err.status === 404 ? 'There is no such project, or it is not yours.' : `The project could not be loaded: ${err.message}`),
    h('p', {}, h('a', { href: '#/' }, 'Back to projects')));
    return;
  }
  const state = projectState(id);
  if (!tab) {
    tab = (project.stats && project.stats.total) || (state.uploader && state.uploader.busy) ? 'photos' : 'upload';
    if (state.uploader && state.uploader.busy) tab = 'upload';
    history.replaceState(null, '', `#/projects/${id}/${tab}`);
  }
  if (current) {
    for (const fn of current.teardown) fn();
  } else {
    // The counts stand whole while the list loads (ProjectModel.addUnlisted).
    if (!state.model.stats) state.model.stats = project.stats;
    state.model.start();
    state.model.load().catch((err) => announce(`The file list could not be loaded: ${err.message}`, 'error'));
  }
  current = { id, model: state.model, teardown: [] };
  document.title = `${project.title} · Lightbox`;

  const body = h('div', { id: 'tab-body' });
  const live = h('span', { class: 'live', id: 'live' });
  const showLive = () => {
    const m = state.model.live;
    live.textContent = m === 'live' ? '● Live' : m === 'connecting' ? '○ Connecting…' : '○ Updating every few seconds';
    live.dataset.state = m;
  };
  state.model.addEventListener('live', showLive);
  current.teardown.push(() => state.model.removeEventListener('live', showLive));
  showLive();

  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Project' },
    TABS.map(([k, label]) => h('a', { href: `#/projects/${id}/${k}`, 'aria-current': k === tab ? 'page' : null, id: `tab-${k}` }, label)));
  clear(context(), h('span', { class: 'crumb', 'aria-hidden': 'true' }, '›'), h('h1', { title: project.title }, project.title), tabs, live);
  // On a phone the tabs scroll sideways: the one shown in sight.
  const shown = tabs.querySelector('[aria-current]');
  if (shown && tabs.scrollWidth > tabs.clientWidth) tabs.scrollLeft += shown.getBoundingClientRect().left - tabs.getBoundingClientRect().left - 8;
  main.dataset.view = tab;
  // What the project says of itself is for the upload; its faces switch
  // sits there and among the photos' filters.
  const upload = tab === 'upload' || !TABS.some(([k]) => k === tab);
  clear(main,
    upload && project.description ? h('p', { class: 'muted description' }, project.description) : null,
    upload ? facesToggle(project) : null,
    upload && project.status !== 'active' ? h('p', { class: 'notice' }, `This project is ${project.status}: it takes no new files.`) : null,
    body);

  if (tab === 'photos') photosTab(body, state, project);
  else if (tab === 'groups') groupsTab(body, state);
  else if (tab === 'review') reviewView(body, state.model, current.teardown);
  else if (tab === 'deliver') deliverView(body, state.model, current.teardown);
  else uploadTab(body, state, project);
}

// facesToggle switches face detection for the project (the API's
// detectFaces): off by default; switching it off deletes the faces found,
// so that asks first.
function facesToggle(project) {
  const box = h('input', { type: 'checkbox', id: 'detect-faces', checked: project.detectFaces || null });
  const note = h('span', { class: 'muted', id: 'detect-faces-note', role: 'status' });
  const faces = followFaces(note, projectState(project.id).model, () => project.detectFaces);
  current.teardown.push(faces.stop);
  box.addEventListener('change', async () => {
    const on = box.checked;
    if (!on && !confirm('Switching faces off deletes every face found in this project. Switch them off?')) {
      box.checked = true;
      return;
    }
    box.disabled = true;
    try {
      const p = await api('PATCH', `/v1/projects/${project.id}`, { detectFaces: on });
      project.detectFaces = p.detectFaces;
      if (on) faces.show();
      else note.textContent = 'Faces are off, and the faces found were deleted.';
    } catch (e) {
      box.checked = !on;
      note.textContent = `Faces could not be switched ${on ? 'on' : 'off'}: ${e.message}`;
    } finally {
      box.disabled = false;
    }
  });
  return h('p', { class: 'check faces-toggle' }, box,
    h('label', { for: 'detect-faces' }, 'Find faces: mark blinks and soft faces (detection only; nobody is recognised)'), ' ', note);
}

// ---- Upload ---------------------------------------------------------------

function uploadTab(root, state, project) {
  const { model } = state;
  const fileInput = h('input', {
    type: 'file', id: 'file-input', multiple: true, class: 'visually-hidden',
    accept: ACCEPT,
  });
  const folderInput = h('input', { type: 'file', id: 'folder-input', multiple: true, webkitdirectory: true, class: 'visually-hidden' });
  const skippedNote = h('p', { class: 'muted', id: 'skipped' });

  const add = async (entries) => {
    if (!entries.length) return;
    if (!state.uploader) state.uploader = new Uploader(model);
    watchUploader();
    const skipped = await state.uploader.add(entries);
    const added = entries.length - skipped.length;
    announce(`Added ${plural(added, 'file')} to upload.`);
    skippedNote.textContent = skipped.length
      ? `Skipped ${plural(skipped.length, 'file')}: ${skipped.slice(0, 3).map((s) => `${s.name} (${s.why})`).join(', ')}${skipped.length > 3 ? ', …' : ''}`
      : '';
  };
  fileInput.addEventListener('change', () => {
    add([...fileInput.files].map((file) => ({ file, path: file.name })));
    fileInput.value = '';
  });
  folderInput.addEventListener('change', () => {
    add([...folderInput.files].map((file) => ({ file, path: file.webkitRelativePath || file.name })));
    folderInput.value = '';
  });

  const drop = h('div', { class: 'drop', id: 'drop' },
    h('p', {}, h('strong', {}, 'Drop photos or folders here'), ' or choose them:'),
    h('div', { class: 'buttons' },
      h('button', { type: 'button', class: 'primary', id: 'choose-files', onclick: () => fileInput.click() }, 'Choose photos'),
      h('button', { type: 'button', id: 'choose-folder', onclick: () => folderInput.click() }, 'Choose a folder')),
    h('p', { class: 'muted small' }, `${FORMAT_NAMES}. Thousands at once are fine: keep this tab open until the upload phase ends.`),
    fileInput, folderInput);
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    announce('Reading the dropped files…');
    add(await droppedFiles(e.dataTransfer));
  });

  const phase = (key, label) => {
    const count = h('span', { class: 'count', id: `count-${key}` });
    const eta = h('span', { class: 'eta', id: `eta-${key}` });
    const bar = h('progress', { max: 1, value: 0, 'aria-labelledby': `phase-${key}` });
    const el = h('div', { class: 'phase', 'data-phase': key },
      h('div', { class: 'phase-head', id: `phase-${key}` }, h('span', { class: 'phase-name' }, label), ' ', count), bar, eta);
    return { el, count, eta, bar };
  };
  const phases = { uploading: phase('uploading', 'Uploading'), processing: phase('processing', 'Processing'), searchable: phase('searchable', 'Searchable') };
  const summary = h('p', { id: 'summary', class: 'summary' });
  const retryAll = h('button', { type: 'button', id: 'retry-all', hidden: true, onclick: () => retryAllFailed(state, retryAll) }, 'Retry all failed');

  // The per-file list.
  let filter = 'all';
  let shown = [];
  const filterBox = h('div', { class: 'segmented', role: 'group', 'aria-label': 'Show files' });
  const filters = [['all', 'All'], ['active', 'In progress'], ['failed', 'Failed']];
  const filterButtons = filters.map(([k, label]) => {
    const b = h('button', { type: 'button', 'aria-pressed': String(k === filter), 'data-filter': k }, label);
    b.addEventListener('click', () => {
      filter = k;
      for (const x of filterButtons) x.setAttribute('aria-pressed', String(x === b));
      redraw();
    });
    filterBox.append(b);
    return b;
  });
  const viewport = h('div', { class: 'vlist', id: 'file-list', role: 'list', 'aria-label': 'Files', tabindex: '0' });
  const empty = h('p', { class: 'muted', id: 'no-files' });
  const list = new VirtualList(viewport, {
    rowHeight: 56,
    count: () => shown.length,
    make: () => {
      const name = h('span', { class: 'fname' });
      const stage = h('span', { class: 'fstage' });
      const detail = h('span', { class: 'fdetail' });
      const retry = h('button', { type: 'button', class: 'small fretry' }, 'Retry');
      const el = h('div', { class: 'frow', role: 'listitem' }, name, stage, detail, retry);
      el.parts = { name, stage, detail, retry };
      retry.addEventListener('click', () => retryRow(state, el.row));
      return el;
    },
    render: (i, el) => fileRow(el, shown[i]),
  });

  function redraw() {
    const c = model.counts();
    const all = c.visible;
    // Each filter counts the rows it shows: while the list loads, fewer
    // than the phase counts above, which the project's stats make whole.
    const failed = all.filter((r) => r.stage === 'failed');
    const active = all.filter((r) => r.stage !== 'failed' && r.stage !== 'searchable' && r.stage !== 'duplicate');
    shown = filter === 'all' ? all : filter === 'failed' ? failed : active;
    filterButtons[0].textContent = `All (${all.length.toLocaleString()})`;
    filterButtons[1].textContent = `In progress (${active.length.toLocaleString()})`;
    filterButtons[2].textContent = `Failed (${failed.length.toLocaleString()})`;
    empty.textContent = !model.loaded && !all.length ? 'Loading the files…'
      : shown.length ? '' : filter === 'all' ? 'No files yet.' : 'None.';
    // As tall as its rows, up to the CSS maximum.
    viewport.style.height = `${Math.max(1, shown.length) * 56 + 2}px`;
    list.refresh();

    // failed: the files that failed before the phase could finish them
    // (the upload's own failures for the upload); uploads left unfinished
    // hold every phase up until their files are added again.
    const set = (p, done, etaSec, failed) => {
      p.count.textContent = `${done.toLocaleString()}/${c.total.toLocaleString()}`;
      p.bar.max = Math.max(1, c.total);
      p.bar.value = done;
      p.eta.textContent = c.total === 0 ? '' : done === c.total ? 'Done'
        : done + failed >= c.total ? `Done but ${plural(failed, 'failed file')}`
          : done + failed + c.incomplete >= c.total ? `${plural(c.incomplete, 'upload')} not finished`
            : Number.isFinite(etaSec) ? `About ${duration(etaSec)} left` : 'Waiting…';
    };
    set(phases.uploading, c.uploaded, c.eta.uploading, c.uploadFailed);
    set(phases.processing, c.processed, c.eta.processing, c.failed);
    set(phases.searchable, c.searchable, c.eta.searchable, c.failed);
    const bits = [];
    if (c.failed) bits.push(`✕ ${plural(c.failed, 'file')} failed`);
    if (c.duplicate) bits.push(`${plural(c.duplicate, 'duplicate')} skipped`);
    if (c.incomplete) bits.push(`${plural(c.incomplete, 'upload')} not finished (add those files again)`);
    const up = state.uploader;
    if (up && up.busy) bits.push(`${up.window.size} parallel uploads`);
    if (up && up.stopped) bits.push(up.stopped);
    if (c.total && c.searchable < c.total - c.failed) {
      bits.push(Number.isFinite(c.eta.all) ? `about ${duration(c.eta.all)} until all are searchable` : 'estimating time left…');
    } else if (c.total && c.searchable === c.total) {
      bits.push('✓ everything is searchable');
    }
    summary.textContent = bits.join(' · ');
    // Only listed rows can be retried. Disabled rather than hidden while the
    // list loads, so the page below does not move under the pointer.
    retryAll.hidden = c.failed === 0;
    retryAll.disabled = !model.loaded || retryAll.dataset.busy === 'true';
    retryAll.textContent = `Retry all failed (${c.failed.toLocaleString()})`;
  }
  model.addEventListener('change', redraw);
  // The ETA moves with time even when no file does.
  const tick = setInterval(() => model.changed(), 2000);
  current.teardown.push(() => {
    model.removeEventListener('change', redraw);
    clearInterval(tick);
  });

  function watchUploader() {
    const up = state.uploader;
    if (!up || up.watched) return;
    up.watched = true;
    up.addEventListener('change', () => model.changed());
  }
  watchUploader();

  clear(root,
    project.status === 'active' ? h('section', { class: 'card', 'aria-labelledby': 'add-h' }, h('h2', { id: 'add-h' }, 'Add photos'), drop, skippedNote) : null,
    h('section', { class: 'card', 'aria-labelledby': 'progress-h' },
      h('h2', { id: 'progress-h' }, 'Progress'),
      h('div', { class: 'phases' }, phases.uploading.el, phases.processing.el, phases.searchable.el),
      summary, retryAll),
    h('section', { class: 'card', 'aria-labelledby': 'files-h' },
      h('div', { class: 'title-row' }, h('h2', { id: 'files-h' }, 'Files'), filterBox),
      empty, viewport));
  redraw();
}

function fileRow(el, row) {
  const { name, stage, detail, retry } = el.parts;
  el.row = row;
  const st = stageOf(row);
  el.dataset.stage = st;
  name.textContent = row.name || '(unnamed)';
  name.title = row.name || '';
  let label = STAGES[st];
  if (st === 'uploading') {
    label = row.local === 'uploading' && row.size ? `Uploading ${Math.floor((100 * (row.sent || 0)) / row.size)}%`
      : row.local === 'waiting' || row.local === 'preparing' || row.local === 'ready' ? 'Waiting' : label;
  }
  stage.textContent = `${ICONS[st] || ''} ${label}`;
  let text = bytes(row.size);
  if (row.note) text = row.note;
  if (st === 'failed' && row.error) text = `${row.error.code}${row.error.message ? ': ' + row.error.message : ''}`;
  if (st === 'duplicate') text = 'Same bytes as a photo already in the project';
  detail.textContent = text;
  detail.title = text;
  const canRetry = st === 'failed' && (row.local === 'failed' ? row.retryable : row.processingFailure);
  retry.hidden = !canRetry;
  retry.setAttribute('aria-label', `Retry ${row.name}`);
}

async function retryRow(state, row) {
  if (!row) return;
  try {
    if (row.local === 'failed' && state.uploader && state.uploader.retryLocal(row)) {
      announce(`Uploading ${row.name} again.`);
      return;
    }
    await api('POST', `/v1/assets/${row.assetId}:reprocess`);
    row.local = 'done';
    state.model.setStatus(row, 'uploaded', null);
    announce(`Processing ${row.name} again.`);
  } catch (err) {
    if (err.code === 'duplicate') state.model.setStatus(row, 'failed', { code: err.code, message: err.message });
    announce(`${row.name} could not be retried: ${err.message}`, 'error');
  }
}

// uploadedAgain marks a failed row whose photo was uploaded again as another
// asset, which is kept: it cannot run again.
function uploadedAgain(model, row, of) {
  model.setStatus(row, 'failed', { code: 'duplicate', message: `The same photo was uploaded again as asset ${of}, which is kept.` });
}

// retryAllFailed sends local failures up again and runs the failed jobs of
// server-side failures again, one call per batch.
async function retryAllFailed(state, button) {
  const { model } = state;
  button.disabled = true;
  button.dataset.busy = 'true';
  try {
    const failed = model.counts().visible.filter((r) => r.stage === 'failed');
    let n = 0;
    const server = new Map();
    const kept = new Map(); // failed asset → the asset its photo was uploaded again as
    for (const row of failed) {
      if (row.local === 'failed') {
        if (state.uploader && state.uploader.retryLocal(row)) n++;
      } else if (row.processingFailure && row.assetId) {
        server.set(row.assetId, row);
      }
    }
    if (server.size) {
      const batches = new Set();
      const covered = new Set();
      await pages(`/v1/projects/${model.projectId}/jobs?status=failed`, (jobs) => {
        for (const j of jobs) {
          if (j.assetId && server.has(j.assetId) && j.batchId) {
            batches.add(j.batchId);
            covered.add(j.assetId);
          }
        }
      });
      for (const b of batches) {
        const res = await api('POST', `/v1/batches/${b}/retry`);
        for (const d of res.duplicates || []) kept.set(d.assetId, d.duplicateOf);
      }
      for (const [id, row] of server) {
        if (!covered.has(id)) {
          try {
            await api('POST', `/v1/assets/${id}:reprocess`);
          } catch (err) {
            if (err.code !== 'duplicate') throw err;
            kept.set(id, err.details && err.details.duplicateOf);
          }
        }
        if (kept.has(id)) {
          uploadedAgain(model, row, kept.get(id));
          continue;
        }
        row.local = 'done';
        model.setStatus(row, 'uploaded', null);
        n++;
      }
    }
    const again = kept.size ? ` ${plural(kept.size, 'file')} cannot run again: uploaded again, the later copy is kept.` : '';
    announce(n ? `Retrying ${plural(n, 'file')}.${again}` : again ? again.trim() : 'Nothing here can be retried: add those files again.');
  } catch (err) {
    announce(`Retry failed: ${err.message}`, 'error');
  } finally {
    delete button.dataset.busy;
    button.disabled = !model.loaded;
  }
}

// droppedFiles reads a drop, walking folders. The entries must be taken
// before the first await: the DataTransfer empties once the event ends.
async function droppedFiles(dt) {
  const entries = [...dt.items].filter((i) => i.kind === 'file').map((i) => i.webkitGetAsEntry && i.webkitGetAsEntry()).filter(Boolean);
  if (!entries.length) return [...dt.files].map((file) => ({ file, path: file.name }));
  const out = [];
  const walk = async (entry, path) => {
    if (entry.isFile) {
      try {
        const file = await new Promise((res, rej) => entry.file(res, rej));
        out.push({ file, path: path + file.name });
      } catch { /* unreadable: skip */ }
      return;
    }
    if (!entry.isDirectory) return;
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej)).catch(() => []);
      if (!batch.length) break;
      for (const e of batch) await walk(e, `${path}${entry.name}/`);
    }
  };
  for (const e of entries) await walk(e, '');
  return out;
}

// tile is a photo's button; update(row) shows another photo in it, as the
// photo grid does when it reuses tiles.
function tile(row, thumbs, onOpen) {
  const img = h('img', { alt: '', loading: 'lazy', width: 160, height: 120 });
  const caption = h('span', { class: 'caption' });
  const badge = h('span', { class: 'badge' });
  const b = h('button', { type: 'button', class: 'tile' }, img, caption, badge);
  b.addEventListener('click', () => onOpen(b.row));
  b.update = (r) => {
    b.row = r;
    const st = stageOf(r);
    b.dataset.asset = r.assetId;
    b.dataset.stage = st;
    caption.textContent = r.name;
    badge.textContent = `${ICONS[st] || ''} ${STAGES[st]}`;
    b.setAttribute('aria-label', `${r.name}, ${STAGES[st]}`);
    thumbs.watch(img, r);
  };
  if (row) b.update(row);
  return b;
}

// ---- Photos ---------------------------------------------------------------

function photosTab(root, state, project) {
  photosView(root, state.model, { onDetails: (row) => showDetails(row, state), teardown: current.teardown, extras: [facesToggle(project)] });
}

// ---- Moments and duplicates -----------------------------------------------

const KINDS = [['moment', 'Moments'], ['burst', 'Bursts'], ['duplicate_group', 'Duplicate groups']];
const ROLES = { winner: '★ Best shot', alt: 'Alternate', candidate: 'Candidate' };

function groupsTab(root, state) {
  const { model } = state;
  const thumbs = new Thumbs();
  const sections = h('div', {});
  clear(root, h('p', { class: 'muted' }, 'Groups are rebuilt shortly after photos become ready. The best shot of each is marked ★ with the reasons it won.'), sections);

  let loading = false;
  async function load() {
    if (loading) return;
    loading = true;
    const out = [];
    try {
      for (const [kind, label] of KINDS) {
        const clusters = [];
        await pages(`/v1/projects/${model.projectId}/clusters?kind=${kind}`, (items) => { clusters.push(...items); }, { limit: 100, max: 500 });
        out.push(h('section', { class: 'card', 'aria-labelledby': `kind-${kind}` },
          h('h2', { id: `kind-${kind}` }, `${label} (${clusters.length.toLocaleString()})`),
          clusters.length ? clusters.map((c) => clusterView(c, model, thumbs, state)) : h('p', { class: 'muted' }, 'None yet.')));
      }
      sections.replaceChildren(...out);
    } catch (err) {
      sections.replaceChildren(h('p', { class: 'error', role: 'alert' }, `The groups could not be loaded: ${err.message}`));
    } finally {
      loading = false;
    }
  }
  let timer = null;
  const reload = () => { clearTimeout(timer); timer = setTimeout(load, 1000); };
  model.addEventListener('clusters', reload);
  current.teardown.push(() => {
    model.removeEventListener('clusters', reload);
    clearTimeout(timer);
    thumbs.stop();
  });
  sections.append(h('p', { class: 'muted' }, 'Loading…'));
  load();
}

function clusterView(c, model, thumbs, state) {
  const members = Array.isArray(c.assets) ? [...c.assets].sort((a, b) => a.rank - b.rank) : [];
  const range = c.startTime ? `${when(c.startTime)}${c.endTime && c.endTime !== c.startTime ? ' – ' + when(c.endTime) : ''}` : '';
  const kindLabel = c.kind === 'duplicate_group' ? 'Duplicate group' : c.kind === 'burst' ? 'Burst' : 'Moment';
  return h('article', { class: 'cluster', 'data-kind': c.kind },
    h('h3', {}, c.title || `${kindLabel}, ${plural(members.length, 'photo')}`,
      !c.title && range ? h('span', { class: 'muted small' }, ` · ${range}`) : null,
      c.reviewed ? h('span', { class: 'badge reviewed', 'data-reviewed': 'true' }, '✓ Reviewed') : null,
      h('a', { href: `#/projects/${model.projectId}/review`, class: 'cluster-review', onclick: () => reviewGroup(c.kind, c.id) }, 'Review')),
    c.whyWinner && c.whyWinner.length
      ? h('p', { class: 'why' }, h('strong', {}, 'Why the best shot won: '), c.whyWinner.join(', ')) : null,
    h('ul', { class: 'grid small-grid' }, members.map((m) => {
      const row = model.byAsset.get(m.assetId) || { assetId: m.assetId, name: m.assetId.slice(0, 8), status: 'ai', local: 'done' };
      const t = tile(row, thumbs, (r) => showDetails(r, state));
      const sig = m.signals || {};
      const facts = ['sharpness', 'exposure', 'resolution'].filter((k) => typeof sig[k] === 'number').map((k) => `${k} ${sig[k].toFixed(2)}`).join(' · ');
      return h('li', { class: m.role === 'winner' ? 'winner' : '' }, t,
        h('span', { class: 'role' }, ROLES[m.role] || m.role), facts ? h('span', { class: 'signals small muted' }, facts) : null);
    })));
}

// ---- Details --------------------------------------------------------------

async function showDetails(row, state) {
  if (!row || !row.assetId) return;
  let dlg = document.getElementById('details');
  if (!dlg) {
    dlg = h('dialog', { id: 'details', 'aria-labelledby': 'details-h' });
    document.body.append(dlg);
  }
  const close = h('button', { type: 'button', class: 'close', onclick: () => dlg.close() }, 'Close');
  const body = h('div', { class: 'details-body' }, h('p', { class: 'muted' }, 'Loading…'));
  clear(dlg, h('div', { class: 'dialog-head' }, h('h2', { id: 'details-h' }, row.name || 'Photo'), close), body);
  if (!dlg.open) dlg.showModal();
  close.focus();

  const id = row.assetId;
  const [asset, files, jobs, att] = await Promise.allSettled([
    api('GET', `/v1/assets/${id}`),
    api('GET', `/v1/assets/${id}/files`),
    api('GET', `/v1/assets/${id}/jobs`),
    api('GET', `/v1/assets/${id}/attestation`),
  ]);
  if (asset.status === 'rejected') {
    clear(body, h('p', { class: 'error' }, `The photo could not be loaded: ${asset.reason.message}`));
    return;
  }
  const a = asset.value;
  const fileList = files.status === 'fulfilled' ? files.value.files : [];
  const preview = fileList.find((f) => f.kind === 'preview') || fileList.find((f) => f.kind === 'thumbnail');
  const fl = a.flags || {};
  // What a photographer reads first: the exposure, the lens and the time.
  const exposure = exposureFacts(a).map(([k, v]) => [k, v || '—']);
  // The assistant's judgement: its keeper score and why it warns.
  const q = a.quality || {};
  const said = new Map((q.reasons || []).map((r) => [r.code, r.message]));
  const warned = (q.warnings || []).map((code) => said.get(code) || code.replace(/_/g, ' '));
  const facts = [
    a.cameraMake || a.cameraModel ? ['Camera', cameraName(a.cameraMake, a.cameraModel)] : null,
    a.widthPx ? ['Size', `${a.widthPx} × ${a.heightPx} px, ${bytes(a.byteSize)}`] : ['Size', bytes(a.byteSize)],
    a.gps ? ['GPS', `${a.gps.lat.toFixed(5)}, ${a.gps.lon.toFixed(5)}`] : null,
    ['Type', a.contentType],
    typeof q.score === 'number' ? ['Keeper score', `${q.score} of 100`] : null,
    Array.isArray(q.warnings) ? ['Warnings', warned.length ? h('ul', { class: 'reasons', id: 'details-reasons' }, warned.map((w) => h('li', {}, w))) : 'None'] : null,
    ['Stage', `${STAGES[stageOf({ local: 'done', status: fl.status })]} (${fl.readiness})`],
    fl.errorCode ? ['Error', `${fl.errorCode}: ${fl.errorMessage || ''}`] : null,
    fl.metadataWarning ? ['Metadata warning', fl.metadataWarning] : null,
    ['Uploaded', when(a.createdAt)],
  ].filter(Boolean);
  const dl = (rows, attrs) => h('dl', attrs, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));

  const sections = [
    h('div', { class: 'details-top exif-first' },
      h('div', {}, dl(exposure, { class: 'facts exposure', id: 'exif' }), dl(facts, { class: 'facts', id: 'details-facts' })),
      preview ? h('img', { src: preview.url, alt: `Preview of ${a.filename}`, class: 'preview' }) : h('p', { class: 'muted' }, 'No preview yet.')),
  ];
  // Only a file whose bytes the server kept can be processed again.
  if (fl.status === 'failed' && !UPLOAD_ERRORS.has(fl.errorCode)) {
    sections.push(h('p', {}, h('button', {
      type: 'button', onclick: async (e) => {
        e.target.disabled = true;
        try {
          await api('POST', `/v1/assets/${id}:reprocess`);
          const r = state.model.byAsset.get(id);
          if (r) { r.local = 'done'; state.model.setStatus(r, 'uploaded', null); }
          announce(`Processing ${a.filename} again.`);
          dlg.close();
        } catch (err) {
          announce(`Could not retry: ${err.message}`, 'error');
          e.target.disabled = false;
        }
      },
    }, 'Process again')));
  }
  // The file's own record, below and folded (open once, open after).
  const tech = [h('dl', { class: 'facts mono', id: 'details-hash' }, h('dt', {}, 'SHA-256'), h('dd', {}, a.checksumSha256 || ''))];
  if (a.exif && Object.keys(a.exif).length) {
    tech.push(h('details', {}, h('summary', {}, 'All metadata (EXIF)'), h('pre', {}, JSON.stringify(a.exif, null, 2))));
  }
  if (a.quality && Object.keys(a.quality).length) {
    tech.push(h('details', {}, h('summary', {}, 'Quality signals'), h('pre', {}, JSON.stringify(a.quality, null, 2))));
  }
  tech.push(h('h3', {}, 'Files'), fileList.length
    ? table(['Kind', 'Type', 'Size', 'Pixels', ''], fileList.map((f) => [f.kind, f.contentType, bytes(f.byteSize),
      f.widthPx ? `${f.widthPx} × ${f.heightPx}` : '', h('a', { href: f.url, target: '_blank', rel: 'noopener' }, 'Open')]))
    : h('p', { class: 'muted' }, 'No files yet.'));
  const jobList = jobs.status === 'fulfilled' ? jobs.value.items : [];
  tech.push(h('h3', {}, 'Jobs'), jobList.length
    ? table(['Type', 'Status', 'Attempt', 'Error', 'Updated'], jobList.map((j) => [j.type, j.status, String(j.attempt),
      j.errorCode ? `${j.errorCode}: ${j.error || ''}` : '', when(j.updatedAt)]))
    : h('p', { class: 'muted' }, 'No jobs.'));
  tech.push(h('h3', {}, 'Attestation'), attestation(att));
  const more = h('details', { id: 'details-tech', open: localStorage.getItem('lightbox.details.tech') === 'open' || null },
    h('summary', {}, 'Hashes, files, jobs and attestation'), tech);
  more.addEventListener('toggle', () => localStorage.setItem('lightbox.details.tech', more.open ? 'open' : 'closed'));
  sections.push(more);
  clear(body, sections);
}

function attestation(res) {
  if (res.status === 'rejected') {
    return h('p', { class: 'muted', id: 'attestation' }, res.reason.code === 'not_attested'
      ? 'Not attested: this file was never finalized as a new original.' : `Unavailable: ${res.reason.message}`);
  }
  const a = res.value;
  const r = a.record;
  const rows = [['Status', a.status + (a.attempts ? ` after ${plural(a.attempts, 'attempt')}` : '')]];
  if (a.lastError) rows.push(['Last error', a.lastError]);
  if (r) {
    rows.push(['Sequence', String(r.seq)], ['Transaction', r.txId], ['Content id (SHA-256)', r.cid],
      ['Previous transaction', r.prevTx], ['Signed', when(r.createdAt)], ['Algorithm', r.algorithm], ['Public key', r.publicKey]);
  }
  return h('dl', { class: 'facts mono', id: 'attestation' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}
