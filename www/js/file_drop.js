// file_drop.js: where files come from: the file input and drag-and-drop anywhere on the page.
// It never looks inside the bytes (the worker reads them; see worker.js).

/**
 * Calls `onFile(file)` for a file chosen in `input` or dropped anywhere on the page.
 * @param {HTMLInputElement} input
 * @param {HTMLElement} overlay  shown while a file is dragged over the page
 * @param {(file: File) => void} onFile
 */
export function wireFileInputs(input, overlay, onFile) {
  input.addEventListener('change', () => {
    const file = input.files && input.files[0];
    if (file) onFile(file);
    input.value = ''; // so that choosing the same file again fires `change`
  });

  let depth = 0;
  /** The drag's data when it carries files, else null. @param {DragEvent} ev */
  const files = (ev) => (ev.dataTransfer && Array.from(ev.dataTransfer.types).includes('Files') ? ev.dataTransfer : null);
  document.addEventListener('dragenter', (ev) => {
    if (files(ev) === null) return;
    ev.preventDefault();
    depth += 1;
    overlay.hidden = false;
  });
  document.addEventListener('dragover', (ev) => {
    const data = files(ev);
    if (data === null) return;
    ev.preventDefault();
    data.dropEffect = 'copy';
  });
  document.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) overlay.hidden = true;
  });
  document.addEventListener('drop', (ev) => {
    const data = files(ev);
    if (data === null) return;
    ev.preventDefault();
    depth = 0;
    overlay.hidden = true;
    const file = data.files[0];
    if (file) onFile(file);
  });
}
