// Virtualized lists: only the rows or tiles in view (and a few around them)
// exist in the DOM, so 100,000 files scroll as smoothly as 20.

// Drawn draws at most once a frame.
class Drawn {
  // refresh redraws at the next frame, however often it is called.
  refresh() {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      this.draw();
    });
  }

  // heldFocus notes which item has the focus, if one of the pool's
  // elements holds it: draw may hand that element to another item.
  heldFocus() {
    const a = document.activeElement;
    const el = a && this.pool.find((e) => !e.hidden && e.contains(a));
    if (!el) return null;
    const path = [];
    for (let n = a; n !== el; n = n.parentElement) path.unshift([...n.parentElement.children].indexOf(n));
    return { index: el.vindex, el, path };
  }

  // keepFocus moves the focus to the element that now shows the item that
  // had it, so the keyboard's place (and Tab's order) stays with the item.
  keepFocus(held, first, need) {
    if (!held) return;
    const k = held.index - first;
    if (k < 0 || k >= need || this.pool[k] === held.el) return;
    let target = this.pool[k];
    for (const i of held.path) target = target && target.children[i];
    if (target) target.focus({ preventScroll: true });
  }
}

// VirtualList is a list scrolled in its own viewport. Rows have one fixed
// height; the rows' elements are reused as the list scrolls.
export class VirtualList extends Drawn {
  // viewport: a scrollable element with a fixed height.
  // rowHeight: px. count(): how many rows. render(i, el): fill el for row i.
  // make(): a new, empty row element.
  constructor(viewport, { rowHeight, count, render, make, overscan = 6 }) {
    super();
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
    const held = this.heldFocus();
    for (let k = 0; k < this.pool.length; k++) {
      const el = this.pool[k];
      const i = first + k;
      if (k >= need) {
        el.hidden = true;
        continue;
      }
      el.hidden = false;
      el.vindex = i;
      el.style.transform = `translateY(${i * h}px)`;
      el.setAttribute('aria-posinset', String(i + 1));
      el.setAttribute('aria-setsize', String(n));
      this.render(i, el);
    }
    this.keepFocus(held, first, need);
  }

  // scrollTo brings row i into view.
  scrollTo(i) {
    this.viewport.scrollTop = i * this.rowHeight;
    this.refresh();
  }
}

// A virtualized grid of tiles in the page's own scroll: the list element
// is as tall as all its rows, and only the tiles in view (and a few rows
// around them) exist, absolutely placed, reused as the page scrolls. So a
// project of 100,000 photos holds a few dozen tiles, and the scrollbar
// still reaches the last photo. Tiles are as wide as the CSS grid's
// columns would make them (minWidth at least, gap between) and all of one
// height, measured from a rendered tile.
export class VirtualGrid extends Drawn {
  // list: the element holding the tiles. count(): how many tiles.
  // render(i, el): fill el for tile i. make(): a new, empty tile element.
  // The tiles' least width and the gap are the CSS properties --tile-min
  // and --tile-gap of list, so a media query can change them.
  constructor(list, { count, render, make, overscan = 2 }) {
    super();
    this.list = list;
    this.count = count;
    this.render = render;
    this.make = make;
    this.overscan = overscan;
    this.rowHeight = 0; // unknown until a tile is measured
    this.pool = [];
    this.queued = false;
    this.onScroll = () => this.refresh();
    window.addEventListener('scroll', this.onScroll, { passive: true });
    window.addEventListener('resize', this.onScroll, { passive: true });
    this.resize = window.ResizeObserver ? new ResizeObserver(this.onScroll) : null;
    if (this.resize) this.resize.observe(list);
    this.refresh();
  }

  draw() {
    const n = this.count();
    const width = this.list.clientWidth || 800;
    if (this.width !== width) { // read once a width, not each frame
      const css = getComputedStyle(this.list);
      this.minWidth = parseFloat(css.getPropertyValue('--tile-min')) || 160;
      this.gap = parseFloat(css.getPropertyValue('--tile-gap')) || 12;
      this.width = width;
    }
    const gap = this.gap;
    const cols = Math.max(1, Math.floor((width + gap) / (this.minWidth + gap)));
    this.cols = cols;
    const tileWidth = (width - gap * (cols - 1)) / cols;
    if (this.tileWidth !== tileWidth) this.rowHeight = 0; // a new width, a new height
    this.tileWidth = tileWidth;
    if (!this.rowHeight && n && this.pool.length) {
      // Measure the first tile at this width.
      const el = this.pool[0];
      el.hidden = false;
      el.style.width = `${tileWidth}px`;
      this.render(0, el);
      this.rowHeight = el.offsetHeight + gap;
    }
    const rowH = this.rowHeight || tileWidth + 30 + gap; // a square and a line, until measured
    const rows = Math.ceil(n / cols);
    this.list.style.height = `${Math.max(0, rows * rowH - gap)}px`;

    const top = -this.list.getBoundingClientRect().top; // how far the page has scrolled past the list's top
    const firstRow = Math.max(0, Math.floor(top / rowH) - this.overscan);
    const lastRow = Math.min(rows, Math.ceil((top + window.innerHeight) / rowH) + this.overscan);
    const first = firstRow * cols;
    const need = Math.max(0, Math.min(n, lastRow * cols) - first);
    while (this.pool.length < need) {
      const el = this.make();
      el.style.position = 'absolute';
      el.style.top = '0';
      el.style.left = '0';
      this.list.append(el);
      this.pool.push(el);
    }
    const held = this.heldFocus();
    for (let k = 0; k < this.pool.length; k++) {
      const el = this.pool[k];
      if (k >= need) {
        el.hidden = true;
        continue;
      }
      const i = first + k;
      const row = Math.floor(i / cols);
      const col = i % cols;
      el.hidden = false;
      el.vindex = i;
      el.style.width = `${tileWidth}px`;
      el.style.transform = `translate(${col * (tileWidth + gap)}px, ${row * rowH}px)`;
      el.setAttribute('aria-posinset', String(i + 1));
      el.setAttribute('aria-setsize', String(n));
      this.render(i, el);
    }
    this.keepFocus(held, first, need);
    // The first draw had no tile to measure: draw again with one.
    if (!this.rowHeight && need) this.refresh();
  }

  // reveal scrolls the page so that tile i is in view, below a bar of
  // inset px stuck to the window's top, and draws at once, so the tile's
  // element exists when it returns (see elementAt).
  reveal(i, inset = 0) {
    const rowH = this.rowHeight || 1;
    const cols = this.cols || 1;
    const listTop = this.list.getBoundingClientRect().top + window.scrollY;
    const top = listTop + Math.floor(i / cols) * rowH;
    const bottom = top + rowH - (this.gap || 0);
    if (top < window.scrollY + inset) window.scrollTo(0, top - inset);
    else if (bottom > window.scrollY + window.innerHeight) window.scrollTo(0, bottom - window.innerHeight);
    this.draw();
  }

  // relayout reads --tile-min and --tile-gap again, as changed since, and
  // draws the tiles at their new size at once.
  relayout() {
    this.width = 0;
    this.draw();
  }

  // elementAt is the element showing tile i, if it is drawn.
  elementAt(i) {
    return this.pool.find((el) => !el.hidden && el.vindex === i) || null;
  }

  destroy() {
    window.removeEventListener('scroll', this.onScroll);
    window.removeEventListener('resize', this.onScroll);
    if (this.resize) this.resize.disconnect();
  }
}
