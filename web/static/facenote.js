// The note beside a project's Find faces switch: while the project looks
// for faces, how many of its processed photos were searched so far. It
// follows the project's events: each scan arrives as asset.updated with
// the photo's faces (the model's marks), each photo processed as a change
// of the rows.

import { plural } from './ui.js';

// SCANNED_STATUSES are the photos a scan looks at (store.Unscanned).
const SCANNED_STATUSES = new Set(['cull', 'search', 'ai']);

// followFaces keeps note saying how far the search for faces is while
// on() is true; show() says it at once, stop() ends the following.
export function followFaces(note, model, on) {
  let timer = null;
  const show = () => {
    clearTimeout(timer);
    timer = null;
    if (!on()) return;
    if (!model.loaded) {
      note.textContent = 'The project’s photos are being searched for faces.';
      return;
    }
    let photos = 0;
    let scanned = 0;
    for (const r of model.rows) {
      if (r.hidden || !SCANNED_STATUSES.has(r.status)) continue;
      photos++;
      if (r.faces) scanned++;
    }
    note.textContent = !photos ? 'Photos are searched for faces once they are processed.'
      : scanned === photos ? `${photos === 1 ? 'The photo' : `All ${plural(photos, 'photo')}`} searched for faces.`
        : `${scanned.toLocaleString()} of ${plural(photos, 'photo')} searched for faces…`;
  };
  // A recount walks every row: at most a few times a second.
  const soon = () => { timer ||= setTimeout(show, 300); };
  model.addEventListener('change', soon);
  model.addEventListener('marks', soon);
  show();
  return {
    show,
    stop() {
      clearTimeout(timer);
      model.removeEventListener('change', soon);
      model.removeEventListener('marks', soon);
    },
  };
}
