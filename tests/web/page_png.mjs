// A tiny PNG decoder for the page tests (screenshots from Chromium): 8-bit RGB or RGBA,
// non-interlaced, the five row filters of the PNG spec. Nothing else is needed here.

import zlib from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Decodes a PNG into `{width, height, channels, pixels}` (`pixels`: `width × height × 4` RGBA
 * bytes, alpha 255 for RGB input). Throws on anything but 8-bit RGB/RGBA without interlacing.
 * @param {Buffer} png
 */
export function decodePng(png) {
  if (!Buffer.isBuffer(png) || png.length < 8 || !png.subarray(0, 8).equals(SIGNATURE)) {
    throw new Error('not a PNG');
  }
  let at = 8;
  let header = null;
  const idat = [];
  while (at + 8 <= png.length) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    at += 12 + length; // length, type, data, CRC
    if (type === 'IHDR') {
      header = {
        width: data.readUInt32BE(0),
        height: data.readUInt32BE(4),
        bitDepth: data[8],
        colorType: data[9],
        interlace: data[12],
      };
    } else if (type === 'IDAT') {
      idat.push(data);
    } else if (type === 'IEND') {
      break;
    }
  }
  if (header === null) throw new Error('PNG without IHDR');
  const { width, height, bitDepth, colorType, interlace } = header;
  if (bitDepth !== 8 || (colorType !== 2 && colorType !== 6) || interlace !== 0) {
    throw new Error(`unsupported PNG: bit depth ${bitDepth}, colour type ${colorType}, interlace ${interlace}`);
  }
  const channels = colorType === 6 ? 4 : 3;
  const stride = width * channels;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  if (raw.length < height * (stride + 1)) throw new Error('PNG data too short');
  const rows = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y += 1) {
    const filter = raw[y * (stride + 1)];
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = rows.subarray(y * stride, (y + 1) * stride);
    const up = y > 0 ? rows.subarray((y - 1) * stride, y * stride) : null;
    for (let i = 0; i < stride; i += 1) {
      const a = i >= channels ? out[i - channels] : 0;
      const b = up ? up[i] : 0;
      const c = up && i >= channels ? up[i - channels] : 0;
      let v;
      switch (filter) {
        case 0: v = src[i]; break;
        case 1: v = src[i] + a; break;
        case 2: v = src[i] + b; break;
        case 3: v = src[i] + ((a + b) >> 1); break;
        case 4: {
          const p = a + b - c;
          const pa = Math.abs(p - a);
          const pb = Math.abs(p - b);
          const pc = Math.abs(p - c);
          v = src[i] + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
          break;
        }
        default: throw new Error(`bad PNG row filter ${filter} in row ${y}`);
      }
      out[i] = v & 0xff;
    }
  }
  const pixels = Buffer.alloc(width * height * 4);
  for (let p = 0; p < width * height; p += 1) {
    pixels[p * 4] = rows[p * channels];
    pixels[p * 4 + 1] = rows[p * channels + 1];
    pixels[p * 4 + 2] = rows[p * channels + 2];
    pixels[p * 4 + 3] = channels === 4 ? rows[p * channels + 3] : 255;
  }
  return { width, height, channels, pixels };
}

/**
 * Colour statistics of a decoded image inside `rect` (`{left, top, right, bottom}` in image px,
 * default the whole image): `colourful` counts pixels that are neither white nor grey-ish
 * (max − min channel > `minChroma`), `colours` maps each such colour (`'r,g,b'`) to its pixel count.
 */
export function colourStats(img, rect = null, minChroma = 40) {
  const r = rect || { left: 0, top: 0, right: img.width, bottom: img.height };
  const x0 = Math.max(0, Math.floor(r.left));
  const x1 = Math.min(img.width, Math.ceil(r.right));
  const y0 = Math.max(0, Math.floor(r.top));
  const y1 = Math.min(img.height, Math.ceil(r.bottom));
  const colours = new Map();
  let colourful = 0;
  for (let y = y0; y < y1; y += 1) {
    for (let x = x0; x < x1; x += 1) {
      const o = (y * img.width + x) * 4;
      const red = img.pixels[o];
      const green = img.pixels[o + 1];
      const blue = img.pixels[o + 2];
      if (Math.max(red, green, blue) - Math.min(red, green, blue) <= minChroma) continue;
      colourful += 1;
      const key = `${red},${green},${blue}`;
      colours.set(key, (colours.get(key) || 0) + 1);
    }
  }
  return { area: Math.max(0, (x1 - x0) * (y1 - y0)), colourful, colours };
}

/** Pixels that differ (any channel by more than `tolerance`) between two same-size images. */
export function differingPixels(a, b, tolerance = 8) {
  if (a.width !== b.width || a.height !== b.height) return a.width * a.height;
  let n = 0;
  for (let o = 0; o < a.pixels.length; o += 4) {
    if (Math.abs(a.pixels[o] - b.pixels[o]) > tolerance
      || Math.abs(a.pixels[o + 1] - b.pixels[o + 1]) > tolerance
      || Math.abs(a.pixels[o + 2] - b.pixels[o + 2]) > tolerance) n += 1;
  }
  return n;
}
