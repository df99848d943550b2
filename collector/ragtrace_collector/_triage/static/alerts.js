// The alert controls of the overview's panel and of an alert's page: their buttons acknowledge, silence and end a silence through the alert API, with the
// CSRF token the guard (_http/_auth.py) set beside the session, then reload the page. The group a button acts
// on travels in its data-* attributes, never in script text.
(function () {
  document.addEventListener('submit', (event) => {
    if (event.target.matches('form.alert-group')) event.preventDefault();  // Enter in a field sends nothing
  });
  document.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-api]');
    if (!button) return;
    const url = button.dataset.api;
    // Only this collector's pages can read the cookie.
    const csrf = (document.cookie.split('; ').find((c) => c.startsWith('ragtrace_csrf=')) || '').slice(14);
    const body = button.dataset.body ? JSON.parse(button.dataset.body) : null;
    const form = button.closest('form');
    if (body && form && form.elements.duration) body.duration = form.elements.duration.value;
    button.disabled = true;
    const headers = {'Content-Type': 'application/json', 'X-CSRF-Token': csrf};
    const reply = await fetch(url, {method: button.dataset.method, headers: headers,
                                    body: body ? JSON.stringify(body) : undefined});
    if (!reply.ok) {
      const said = await reply.json().catch(() => ({}));
      document.getElementById('alert-error').textContent = said.error || ('HTTP ' + reply.status);
      button.disabled = false;
      return;
    }
    location.reload();
  });
})();
