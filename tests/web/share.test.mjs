// Node unit tests of www/js/share.js's pure functions: the deep-link hash codec, the embedding
// protocol's message check and `?url=`. No browser: share.js touches `window` / `location`
// only when its classes are built or `urlParam` is called (run by `cargo xtask test`).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { VIEWS, encodeHash, decodeHash, checkEmbedMessage, urlParam, urlParams } from '../../www/js/share.js';

test('an empty state is an empty hash, and an empty hash an empty state', () => {
  assert.equal(encodeHash({}), '');
  assert.deepEqual(decodeHash(''), {});
  assert.deepEqual(decodeHash('#'), {});
});

test('every field of a timeline link survives a round trip', () => {
  const s = {
    view: 'active', file: 1, device: 3, x: [0.5, 1234.25], y: [0, 1e9], pin: 42, q: 'a b&c=#d/é', only: true,
  };
  const hash = encodeHash(s);
  assert.ok(hash.startsWith('#view=active&file=1&device=3&pin=42'), hash);
  assert.deepEqual(decodeHash(hash), s);
  // Without the leading '#' too (location.hash has it, a parent page may not).
  assert.deepEqual(decodeHash(hash.slice(1)), s);
});

test('a time-axis link holds axis=time (x in µs); links without it are in timesteps', () => {
  const s = { view: 'active', axis: 'time', x: [1000, 2250.5], y: [0, 1e7] };
  const hash = encodeHash(s);
  assert.match(hash, /axis=time&x=1000%2C2250\.5/);
  assert.deepEqual(decodeHash(hash), s);
  assert.equal(decodeHash('#view=active&x=1,3&y=0,9').axis, undefined);
  assert.equal(decodeHash('#axis=steps&x=1,3').axis, undefined, 'only time is an axis value');
});

test('state history and flamegraph links survive a round trip', () => {
  for (const s of [
    { view: 'state', file: 0, device: 0, event: 1_000_000 },
    { view: 'flame', file: 2, device: 1, at: 'phase:3', node: 7, q: '/^alloc.*$/i' },
    { view: 'flame', at: 'range:10:2000' },
    { view: 'segments', at: '12345' },
    { view: 'pools', at: 'lifetime' },
  ]) {
    assert.deepEqual(decodeHash(encodeHash(s)), s);
  }
});

test('numbers are written short but restore the same view', () => {
  const hash = encodeHash({ x: [1 / 3, 2 / 3], y: [123456789.123456789, -0.000001] });
  assert.equal(hash, '#x=0.333333333333%2C0.666666666667&y=123456789.123%2C-0.000001');
  const back = decodeHash(hash);
  assert.ok(Math.abs(back.x[0] - 1 / 3) < 1e-12);
  assert.ok(Math.abs(back.y[0] - 123456789.123456789) < 1e-3);
});

test('null, undefined, fractional and false fields are left out of the hash', () => {
  assert.equal(encodeHash({
    view: null, file: 1.5, device: undefined, pin: null, event: Number.NaN, node: '3', q: '', only: false,
  }), '');
  assert.equal(encodeHash({ file: 0 }), '#file=0');
});

test('a malformed hash is dropped field by field, never an error', () => {
  assert.deepEqual(decodeHash(undefined), {});
  assert.deepEqual(decodeHash(42), {});
  assert.deepEqual(decodeHash({ view: 'active' }), {});
  assert.deepEqual(decodeHash('#view=evil&file=1'), { file: 1 });
  assert.deepEqual(decodeHash('#file=abc&device=1.5&pin=1e10&event=-3&node='), { event: -3 });
  assert.deepEqual(decodeHash('#file=2147483648&device=2147483647'), { device: 2147483647 });
  assert.deepEqual(decodeHash(`#file=${'1'.repeat(41)}`), {});
  assert.deepEqual(decodeHash('#x=1&y=1,2,3'), {});
  assert.deepEqual(decodeHash('#x=NaN,1&y=Infinity,2'), {});
  assert.deepEqual(decodeHash('#x=,1&y=1,'), {});
  assert.deepEqual(decodeHash('#x=-1,2e3'), { x: [-1, 2000] });
  assert.deepEqual(decodeHash('#only=0'), {});
  assert.deepEqual(decodeHash('#only=true'), {});
  assert.deepEqual(decodeHash('#only=1'), { only: true });
  // The view must be one of the page's views, exactly.
  for (const v of VIEWS) assert.deepEqual(decodeHash(`#view=${v}`), { view: v });
  assert.deepEqual(decodeHash('#view=Active'), {});
  assert.deepEqual(decodeHash('#view=__proto__'), {});
});

test('the flamegraph moment is one of the known forms, nothing else', () => {
  for (const at of ['peak', 'click', 'lifetime', 'diff', 'phase:0', 'phase:999999', 'range:0:1', '0', '9999999999']) {
    assert.deepEqual(decodeHash(`#at=${encodeURIComponent(at)}`), { at }, at);
  }
  for (const at of ['phase:', 'phase:1234567', 'phase:x', 'range:1', 'range:1:2:3', '-1', '12345678901', 'peak ',
    '<script>alert(1)</script>', 'javascript:alert(1)']) {
    assert.deepEqual(decodeHash(`#at=${encodeURIComponent(at)}`), {}, at);
  }
});

test('an over-long search or hash is dropped', () => {
  assert.deepEqual(decodeHash(`#q=${'a'.repeat(4096)}`), { q: 'a'.repeat(4096) });
  assert.deepEqual(decodeHash(`#q=${'a'.repeat(4097)}`), {});
  assert.deepEqual(decodeHash(`#view=active&q=${'a'.repeat(4 * 4096)}`), {});
});

test('well-formed embed messages are accepted', () => {
  for (const m of [
    {},
    { type: 'ping' },
    { buffer: new ArrayBuffer(8) },
    { buffer: new Uint8Array(4) },
    { buffer: new DataView(new ArrayBuffer(2)) },
    { buffer: new Blob(['x']), title: 'rank 0' },
    { url: 'https://example.invalid/snap.pickle', title: '', view: 'flame', device: 0, range: [0, 10.5] },
    { url: 'snap.pickle.gz' },
    { view: 'state' },
    { device: 2 ** 31 - 1 },
    { range: [-5, -1] },
  ]) {
    assert.equal(checkEmbedMessage(m), null, JSON.stringify(Object.keys(m)));
  }
});

test('malformed or hostile embed messages are refused with a reason', () => {
  const refused = [
    [null, 'must be an object'],
    [undefined, 'must be an object'],
    ['PING', 'must be an object'],
    [42, 'must be an object'],
    [[], 'must be an object'],
    [{ type: 'load' }, 'only message type'],
    [{ type: 'PING' }, 'only message type'],
    [{ foo: 1 }, 'unknown keys: foo'],
    [JSON.parse('{"__proto__": {"polluted": true}}'), 'unknown keys: __proto__'],
    [{ buffer: new ArrayBuffer(1), url: 'a' }, 'either buffer or url'],
    [{ buffer: 'bytes' }, 'buffer must be'],
    [{ buffer: { byteLength: 5 } }, 'buffer must be'],
    [{ buffer: null }, 'buffer must be'],
    [{ url: '' }, 'url must be'],
    [{ url: 5 }, 'url must be'],
    [{ url: 'x'.repeat(4097) }, 'url must be'],
    [{ title: 5 }, 'title must be'],
    [{ title: 'x'.repeat(257) }, 'title must be'],
    [{ view: 'evil' }, 'view must be one of'],
    [{ view: null }, 'view must be one of'],
    [{ device: -1 }, 'device must be'],
    [{ device: 1.5 }, 'device must be'],
    [{ device: '0' }, 'device must be'],
    [{ device: 2 ** 31 }, 'device must be'],
    [{ range: [0] }, 'range must be'],
    [{ range: [0, 1, 2] }, 'range must be'],
    [{ range: [0, Number.NaN] }, 'range must be'],
    [{ range: [0, Infinity] }, 'range must be'],
    [{ range: ['0', 1] }, 'range must be'],
    [{ range: { 0: 0, 1: 1, length: 2 } }, 'range must be'],
  ];
  for (const [m, why] of refused) {
    const got = checkEmbedMessage(m);
    assert.equal(typeof got, 'string', `accepted: ${String(m && typeof m === 'object' ? Object.keys(m) : m)}`);
    assert.ok(got.includes(why), `${got} (wanted: ${why})`);
  }
});

test('the unknown keys a message names are few and short', () => {
  const m = {};
  for (let i = 0; i < 100; i += 1) m[`key${i}_${'x'.repeat(100)}`] = i;
  const got = checkEmbedMessage(m);
  assert.ok(got.startsWith('unknown keys: key0_'), got);
  assert.ok(got.length <= 'unknown keys: '.length + 200, `${got.length} characters`);
});

test('?url= is resolved against the page, and refused when empty, too long or malformed', () => {
  const at = (href) => {
    const u = new URL(href);
    globalThis.location = /** @type {any} */ ({ href: u.href, search: u.search });
  };
  try {
    at('http://host/sub/dir/index.html?url=snaps/a.pickle');
    assert.equal(urlParam(), 'http://host/sub/dir/snaps/a.pickle');
    at('http://host/index.html?mode=embedded&url=https%3A%2F%2Fother.invalid%2Fb.pickle');
    assert.equal(urlParam(), 'https://other.invalid/b.pickle');
    at('http://host/index.html');
    assert.equal(urlParam(), null);
    at('http://host/index.html?url=');
    assert.equal(urlParam(), null);
    at(`http://host/index.html?url=${'a'.repeat(4097)}`);
    assert.equal(urlParam(), null);
    at('http://host/index.html?url=http%3A%2F%2F%5B');
    assert.equal(urlParam(), null);
    // `memviz open A B`: every url in order, percent-encoded names kept encoded in the path.
    at('http://127.0.0.1:9/?url=files%2F0%2Fa%2520b.pickle&url=&url=files%2F1%2Fc.pickle');
    assert.deepEqual(urlParams(), ['http://127.0.0.1:9/files/0/a%20b.pickle', 'http://127.0.0.1:9/files/1/c.pickle']);
    assert.equal(urlParam(), 'http://127.0.0.1:9/files/0/a%20b.pickle');
    at('http://host/index.html');
    assert.deepEqual(urlParams(), []);
  } finally {
    delete globalThis.location;
  }
});

test('the "What if" tab\'s settings and capacity survive a round trip', () => {
  for (const s of [
    { view: 'active', wif: 'expandable_segments:True,max_split_size_mb:512', wcap: '40' },
    { view: 'segments', wif: 'roundup_power2_divisions:[256:1,>:4],garbage_collection_threshold:0.6', wcap: 'custom:37.5' },
    { view: 'active', wif: '' },
  ]) {
    assert.deepEqual(decodeHash(encodeHash(s)), s, JSON.stringify(s));
  }
  // A capacity alone is no setting; a malformed capacity is left out, the settings kept.
  assert.deepEqual(decodeHash('#wcap=40'), {});
  assert.deepEqual(decodeHash('#wif=expandable_segments:True&wcap=40GB<img>'), { wif: 'expandable_segments:True' });
  assert.equal(decodeHash(`#wif=${'x'.repeat(5000)}`).wif, undefined);
});
