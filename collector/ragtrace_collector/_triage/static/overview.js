// The overview: draws each chart from its JSON data block (plotly.js, loaded before this file from its own
// cached URL), and says when new records have arrived since the page was read (polled by arrival order; the
// page never reloads itself, which would lose the reader's place).
(function () {
  for (const block of document.querySelectorAll('script.figure[type="application/json"]')) {
    const figure = JSON.parse(block.textContent);
    const target = document.getElementById(block.dataset.for);
    if (target && window.Plotly) {
      window.Plotly.newPlot(target, figure.data, figure.layout, {displaylogo: false, responsive: true});
    }
  }
  const note = document.getElementById('fresh');
  if (!note) return;
  const every = Number(note.dataset.pollMs) || 60000;
  async function poll() {
    try {
      const scope = note.dataset.scope;
      const reply = await fetch('/api/records?limit=500&' + (scope ? scope + '&' : '') + 'after_row=' +
                                note.dataset.afterRow, {headers: {'Accept': 'application/json'}});
      if (reply.ok) {
        const data = await reply.json();
        const n = data.records.length;
        if (n) {
          note.textContent = (data.more ? '500+' : n) + ' new record(s) since this page loaded: ';
          const reload = document.createElement('a');
          reload.href = location.pathname + location.search;
          reload.textContent = 'reload';
          const list = document.createElement('a');
          list.href = '/records' + (scope ? '?' + scope : '');
          list.textContent = 'see them in the records list';
          note.append(reload, ' or ', list);
        }
      }
    } catch (err) { /* the next poll tries again */ }
    setTimeout(poll, every);
  }
  setTimeout(poll, every);
})();
