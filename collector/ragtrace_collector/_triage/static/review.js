// The record page's review controls: the answer (and each claim) right or wrong, with a note, posted to the
// review API with the CSRF token the guard (_http/_auth.py) set beside the session; then the page reloads.
(function () {
  document.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-grounded]');
    if (!button) return;
    const form = document.getElementById('review');
    const claim = button.dataset.claim === '' ? null : Number(button.dataset.claim);
    const body = {span_id: form.dataset.span, claim: claim, grounded: button.dataset.grounded === 'true',
                  note: form.elements.note.value || null, author: form.elements.author.value || null};
    button.disabled = true;
    const csrf = (document.cookie.split('; ').find((c) => c.startsWith('ragtrace_csrf=')) || '').slice(14);
    const reply = await fetch('/api/reviews', {method: 'POST',
                                               headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf},
                                               body: JSON.stringify(body)});
    if (!reply.ok) {
      const said = await reply.json().catch(() => ({}));
      document.getElementById('review-status').textContent = said.error || ('HTTP ' + reply.status);
      button.disabled = false;
      return;
    }
    if (form.elements.author.value) localStorage.setItem('ragtrace-author', form.elements.author.value);
    location.reload();
  });
  document.addEventListener('submit', (event) => {
    if (event.target.id === 'review') event.preventDefault();  // Enter in the note sends nothing
  });
  const form = document.getElementById('review');
  if (form && !form.elements.author.value) form.elements.author.value = localStorage.getItem('ragtrace-author') || '';
})();
