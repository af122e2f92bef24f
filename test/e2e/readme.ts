import { readFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "../..");
const FENCE = "`".repeat(3);

/** One section of a page (the README or a docs/ page): from its heading to the next heading. */
export function section(heading: string, file = "README.md"): string {
  const page = readFileSync(path.join(ROOT, file), "utf8");
  const start = page.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`${file} has no section ${heading}`);
  const rest = page.slice(start + heading.length + 2);
  const end = rest.search(/\n#{2,3} /);
  return end < 0 ? rest : rest.slice(0, end);
}

/** The fenced code blocks of one language in a section's text. */
export const fenced = (text: string, lang = "sh") =>
  [...text.matchAll(new RegExp(`${FENCE}${lang}\n([\\s\\S]*?)${FENCE}`, "g"))].map((m) => m[1]!);

/** The fenced sh blocks of one README section. */
export const shBlocks = (heading: string) => fenced(section(heading));
