// The records list: j/k move between records, Enter opens one, / searches; on the first page, new records are
// added at the top as they arrive (the reader's rows stay where they were on screen). Its settings come in the
// table's data-* attributes (the page holds no script of its own: _assets.py).
(function () {
  const table = document.getElementById('records');
  if (!table) return;
  const note = document.getElementById('live');
  const rows = () => Array.from(table.querySelectorAll('tr.row a.open'));
  document.addEventListener('keydown', (ev) => {
    if (ev.target.matches('input, select, textarea') || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const links = rows(); const i = links.indexOf(document.activeElement);
    if (ev.key === 'j') { (links[i + 1] || links[0]) && (links[i + 1] || links[0]).focus(); ev.preventDefault(); }
    if (ev.key === 'k') { (links[i - 1] || links[0]) && (links[i - 1] || links[0]).focus(); ev.preventDefault(); }
    if (ev.key === '/') { document.querySelector('input[name=q]').focus(); ev.preventDefault(); }
  });
  if (table.dataset.live !== '1') return;
  const every = Number(table.dataset.pollMs) || 10000;
  let added = 0;
  async function poll() {
    let again = every;
    try {
      const reply = await fetch('/api/records?' + table.dataset.query + (table.dataset.query ? '&' : '') +
                                'after_row=' + table.dataset.lastRow, {headers: {'Accept': 'application/json'}});
      if (reply.ok) {
        const data = await reply.json();
        table.dataset.lastRow = data.last_row;
        if (data.rows_html.length) {
          const y = window.scrollY, h = document.body.scrollHeight;
          const empty = table.querySelector('tr.none');
          if (empty) empty.remove();
          // They come in the order they arrived: each goes on top of the one before. The rows are the
          // collector's own HTML, every value in them escaped (_list_html.row_html).
          for (const row of data.rows_html) table.querySelector('tbody').insertAdjacentHTML('afterbegin', row);
          if (y > 0) window.scrollTo(0, y + document.body.scrollHeight - h);
          added += data.rows_html.length;
          note.textContent = added + ' new record(s) added at the top since this page loaded';
        }
        if (data.more) again = 0;  // a burst: take the rest now, a page at a time
      }
    } catch (err) { /* the next poll tries again */ }
    setTimeout(poll, again);
  }
  setTimeout(poll, every);
})();
