/**
 * DOM helpers shared by the shell's modules.
 */

/**
 * Replaces `el`'s children with `nodes` (any iterable). Unlike `el.replaceChildren(...nodes)`
 * it does not pass one argument per node, which overflows the call stack for long lists (a
 * file with a hundred thousand devices fills the device list).
 * @param {Element} el
 * @param {Iterable<Node>} nodes
 */
export function setChildren(el, nodes) {
  const frag = document.createDocumentFragment();
  for (const n of nodes) frag.append(n);
  el.replaceChildren(frag);
}
