// The app's colours, applied before the page is first drawn: the neutral
// dark grey of index.html unless light was chosen (ui.js's setTheme keeps
// the choice), whatever the system prefers. A classic script, so that it
// runs before the first paint; modules run after it.
try {
  if (localStorage.getItem('lightbox.theme') === 'light') document.documentElement.dataset.theme = 'light';
} catch { /* storage refused: dark */ }
