// Every page: the scope picker (time range and service, in the header) applies as soon as it changes; without
// script its button does the same.
(function () {
  const form = document.querySelector('form.scope');
  if (!form) return;
  for (const field of form.querySelectorAll('select')) field.addEventListener('change', () => form.submit());
})();
