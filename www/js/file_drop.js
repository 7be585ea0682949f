// file_drop.js: where bytes come from. Turns a File, Blob, ArrayBuffer (or view) or URL into a
// name, an optional total size and an async stream of Uint8Array chunks; wires the file input
// and drag-and-drop anywhere on the page. It never looks inside the bytes.

const ARRAY_CHUNK_BYTES = 1 << 20;

/**
 * @param {File | Blob | ArrayBuffer | ArrayBufferView | string} src
 * @returns {Promise<{name: string, total: number | null, chunks: AsyncGenerator<Uint8Array>, cancel: () => void}>}
 */
export async function openSource(src) {
  if (typeof src === 'string' || src instanceof URL) {
    const url = new URL(String(src), document.baseURI);
    const name = decodeURIComponent(url.pathname.split('/').pop() || url.pathname);
    const response = await fetch(url);
    if (!response.ok || response.body === null) {
      throw new Error(`the server answered ${response.status} ${response.statusText}`.trim());
    }
    const length = response.headers.get('content-length');
    const encoded = response.headers.get('content-encoding');
    const total = length !== null && !encoded ? Number(length) : null;
    return fromReader(name, total, response.body.getReader());
  }
  if (src instanceof Blob) {
    const name = src instanceof File ? src.name : 'Blob';
    return fromReader(name, src.size, src.stream().getReader());
  }
  if (src instanceof ArrayBuffer || ArrayBuffer.isView(src)) {
    const bytes = src instanceof ArrayBuffer
      ? new Uint8Array(src)
      : new Uint8Array(src.buffer, src.byteOffset, src.byteLength);
    let cancelled = false;
    async function* chunks() {
      for (let at = 0; at < bytes.length && !cancelled; at += ARRAY_CHUNK_BYTES) {
        yield bytes.subarray(at, at + ARRAY_CHUNK_BYTES);
      }
    }
    return { name: 'ArrayBuffer', total: bytes.length, chunks: chunks(), cancel: () => { cancelled = true; } };
  }
  throw new Error('expected a File, Blob, ArrayBuffer or URL');
}

/** @param {ReadableStreamDefaultReader<Uint8Array>} reader */
function fromReader(name, total, reader) {
  async function* chunks() {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      if (value.length > 0) yield value;
    }
  }
  return { name, total, chunks: chunks(), cancel: () => { reader.cancel().catch(() => {}); } };
}

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
  const hasFiles = (ev) => Boolean(ev.dataTransfer && Array.from(ev.dataTransfer.types).includes('Files'));
  document.addEventListener('dragenter', (ev) => {
    if (!hasFiles(ev)) return;
    ev.preventDefault();
    depth += 1;
    overlay.hidden = false;
  });
  document.addEventListener('dragover', (ev) => {
    if (!hasFiles(ev)) return;
    ev.preventDefault();
    ev.dataTransfer.dropEffect = 'copy';
  });
  document.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) overlay.hidden = true;
  });
  document.addEventListener('drop', (ev) => {
    if (!hasFiles(ev)) return;
    ev.preventDefault();
    depth = 0;
    overlay.hidden = true;
    const file = ev.dataTransfer.files[0];
    if (file) onFile(file);
  });
}
