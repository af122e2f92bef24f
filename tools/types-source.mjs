#!/usr/bin/env node
/**
 * After `wrangler types` (npm run types): the Env's object classes and `mainModule` are typed
 * from the source, not from the built entry wrangler.toml's main names (dist/worker/index.js,
 * plain JavaScript that may not even be built yet).
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const file = path.resolve(import.meta.dirname, "..", "types", "worker-configuration.d.ts");
writeFileSync(file, readFileSync(file, "utf8").replaceAll('import("../dist/worker/index")', 'import("../src/index")'));
