// file_drop.js: where files come from: the file input and drag-and-drop anywhere on the page.
// It never looks inside the bytes (the worker reads them; see worker.js).

/**
 * Calls `onFiles(files)` with the files chosen in `input` (it takes several) or dropped
 * anywhere on the page: every one of them, in order.
 * @param {HTMLInputElement} input
 * @param {HTMLElement} overlay  shown while a file is dragged over the page
 * @param {(files: File[]) => void} onFiles
 */
export function wireFileInputs(input, overlay, onFiles) {
  input.addEventListener('change', () => {
    const files = input.files ? Array.from(input.files) : [];
    if (files.length > 0) onFiles(files);
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
    const dropped = Array.from(data.files);
    if (dropped.length > 0) onFiles(dropped);
  });
}
