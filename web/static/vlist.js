// A virtualized list: only the rows in view (and a few around them) exist
// in the DOM, so 20,000 files scroll as smoothly as 20. Rows have one fixed
// height; the rows' elements are reused as the list scrolls.

export class VirtualList {
  // viewport: a scrollable element with a fixed height.
  // rowHeight: px. count(): how many rows. render(i, el): fill el for row i.
  // make(): a new, empty row element.
  constructor(viewport, { rowHeight, count, render, make, overscan = 6 }) {
    this.viewport = viewport;
    this.rowHeight = rowHeight;
    this.count = count;
    this.render = render;
    this.make = make;
    this.overscan = overscan;
    this.spacer = document.createElement('div');
    this.spacer.className = 'vlist-spacer';
    this.viewport.replaceChildren(this.spacer);
    this.pool = [];
    this.queued = false;
    viewport.addEventListener('scroll', () => this.refresh(), { passive: true });
    if (window.ResizeObserver) new ResizeObserver(() => this.refresh()).observe(viewport);
    this.refresh();
  }

  // refresh redraws at the next frame, however often it is called.
  refresh() {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      this.draw();
    });
  }

  draw() {
    const n = this.count();
    const h = this.rowHeight;
    this.spacer.style.height = `${n * h}px`;
    const top = this.viewport.scrollTop;
    const visible = Math.ceil((this.viewport.clientHeight || 400) / h);
    const first = Math.max(0, Math.floor(top / h) - this.overscan);
    const last = Math.min(n, first + visible + 2 * this.overscan);
    const need = last - first;
    while (this.pool.length < need) {
      const el = this.make();
      el.style.position = 'absolute';
      el.style.left = '0';
      el.style.right = '0';
      el.style.height = `${h}px`;
      this.spacer.append(el);
      this.pool.push(el);
    }
    for (let k = 0; k < this.pool.length; k++) {
      const el = this.pool[k];
      const i = first + k;
      if (k >= need) {
        el.hidden = true;
        continue;
      }
      el.hidden = false;
      el.style.transform = `translateY(${i * h}px)`;
      el.setAttribute('aria-posinset', String(i + 1));
      el.setAttribute('aria-setsize', String(n));
      this.render(i, el);
    }
  }

  // scrollTo brings row i into view.
  scrollTo(i) {
    this.viewport.scrollTop = i * this.rowHeight;
    this.refresh();
  }
}
