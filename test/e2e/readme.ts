import { readFileSync } from "node:fs";
import path from "node:path";

const README = readFileSync(path.resolve(import.meta.dirname, "../../README.md"), "utf8");

/** The fenced sh blocks of one README section (from its heading to the next heading). */
export function shBlocks(heading: string): string[] {
  const start = README.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`README has no section ${heading}`);
  const rest = README.slice(start + heading.length + 2);
  const section = rest.slice(0, rest.search(/\n#{2,3} /));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}
