// `npm run bench [-- <suite>...]`: runs the default suites, or the ones named (arguments or
// BENCH_ONLY), and prints each figure next to a baseline measured in the same run. See
// bench/README.md; `npm run bench -- --help` lists the suites.
import os from "node:os";
import { createRun } from "./lib/context.mjs";
import { benchScript } from "./lib/harness.mjs";
import { printTable } from "./lib/report.mjs";
import { SUITES } from "./suites/index.mjs";

function usage() {
  const width = Math.max(...SUITES.map((s) => s.name.length));
  return [
    "usage: npm run bench [-- <suite>... | all | --help]",
    "       BENCH_ONLY=<suite>,<suite> npm run bench",
    "",
    "With no suite named, runs the ones marked *. Knobs (BENCH_SECONDS, BENCH_ROUNDS, ...): bench/README.md.",
    "",
    ...SUITES.map((s) => `  ${s.byDefault ? "*" : " "} ${s.name.padEnd(width)}  ${s.description}`),
  ].join("\n");
}

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  console.log(usage());
  process.exit(0);
}
const named = (args.length > 0 ? args.join(",") : (process.env.BENCH_ONLY ?? ""))
  .split(",")
  .map((s) => s.trim())
  .filter(Boolean);
const unknown = named.filter((n) => n !== "all" && !SUITES.some((s) => s.name === n));
if (unknown.length > 0) {
  console.error(`unknown suite${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}\n\n${usage()}`);
  process.exit(2);
}
const selected = SUITES.filter((s) =>
  named.length === 0 ? s.byDefault : named.includes("all") || named.includes(s.name),
);

const { step, check, failures } = benchScript(
  "bench",
  " (other load skews req/s; ratios are measured in alternating rounds)",
);
step(`suites: ${selected.map((s) => s.name).join(", ")}`);
const run = createRun({ step, check });
const rows = [];
try {
  for (const suite of selected) {
    step(`${suite.name}: ${suite.description}`);
    try {
      rows.push(...(await suite.run(run.context())));
    } catch (e) {
      check(false, `${suite.name} stopped: ${e?.stack ?? e}`);
    } finally {
      await run.suiteDone();
    }
  }
} finally {
  await run.dispose();
}

console.log("");
printTable(rows);
console.log("");
step(
  `done; load average now ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
if (failures.length > 0) {
  console.error(`\nThe bench itself is broken (figures above are not trustworthy):\n- ${failures.join("\n- ")}`);
  process.exit(1);
}
