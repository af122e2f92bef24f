// Bundles the page into dist/; with --serve, also serves dist/ on http://localhost:5173 and rebuilds on change.
import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import * as esbuild from "esbuild";

const here = import.meta.dirname;
const dist = path.join(here, "dist");
mkdirSync(dist, { recursive: true });
copyFileSync(path.join(here, "index.html"), path.join(dist, "index.html"));

const options = {
  entryPoints: [path.join(here, "app.tsx")],
  outfile: path.join(dist, "app.js"),
  bundle: true,
  format: "esm",
  jsx: "automatic",
  minify: true,
  target: "es2022",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "info",
};

if (process.argv.includes("--serve")) {
  const context = await esbuild.context(options);
  await context.watch();
  await context.serve({ servedir: dist, host: "127.0.0.1", port: 5173 });
  console.log("examples/chat on http://localhost:5173/");
} else {
  await esbuild.build(options);
}
