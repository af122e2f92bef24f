// Builds the extension into extension/dist (load it unpacked from there): the TypeScript
// bundled by esbuild, the static files copied, and the toolbar icons drawn here.
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { crc32, deflateSync } from "node:zlib";
import * as esbuild from "esbuild";

const here = import.meta.dirname;
const dist = path.join(here, "dist");
rmSync(dist, { recursive: true, force: true });
mkdirSync(path.join(dist, "icons"), { recursive: true });
cpSync(path.join(here, "static"), dist, { recursive: true });

await esbuild.build({
  entryPoints: ["background", "options", "popup"].map((name) => path.join(here, "src", `${name}.ts`)),
  outdir: dist,
  bundle: true,
  format: "esm",
  target: "chrome116",
  // Readable output: store reviewers (and users) can read what runs.
  minify: false,
  legalComments: "none",
  logLevel: "warning",
});

for (const size of [16, 32, 48, 128]) writeFileSync(path.join(dist, "icons", `${size}.png`), icon(size));
console.log(`extension built into ${path.relative(process.cwd(), dist) || "."}`);

/** A blue rounded square with a white dot: an RGBA PNG of `size` × `size`. */
function icon(size) {
  const raw = Buffer.alloc(size * (size * 4 + 1));
  const r = size * 0.2;
  for (let y = 0; y < size; y++) {
    raw[y * (size * 4 + 1)] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      const cx = Math.min(Math.max(x + 0.5, r), size - r);
      const cy = Math.min(Math.max(y + 0.5, r), size - r);
      const inside = Math.hypot(x + 0.5 - cx, y + 0.5 - cy) <= r;
      const dot = Math.hypot(x + 0.5 - size / 2, y + 0.5 - size / 2) <= size * 0.18;
      const rgba = !inside ? [0, 0, 0, 0] : dot ? [255, 255, 255, 255] : [31, 111, 235, 255];
      Buffer.from(rgba).copy(raw, y * (size * 4 + 1) + 1 + x * 4);
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function chunk(type, data) {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}
