/**
 * The README and docs/ as a reader follows them: every relative link reaches a file, every
 * `#anchor` a heading of it, every page of docs/ is in its index, and the README stays short.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DOCS = readdirSync(path.join(ROOT, "docs"))
  .filter((f) => f.endsWith(".md"))
  .map((f) => `docs/${f}`);
const PAGES = ["README.md", "bench/README.md", "examples/chat/README.md", ...DOCS];

const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");

/** The text outside fenced code blocks (a `# comment` in a shell block is no heading). */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, "");

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replaceAll(" ", "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Relative links of a page: [text](target), minus URLs with a scheme. */
const links = (markdown: string) =>
  [...prose(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/i.test(t));

describe("README and docs/", () => {
  it.each(PAGES)("%s: every relative link resolves to a file and, with #anchor, to a heading", (page) => {
    const broken: string[] = [];
    for (const target of links(read(page))) {
      const [file = "", anchor] = target.split("#");
      const resolved = file ? path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, page)), file)) : page;
      if (!existsSync(path.join(ROOT, resolved))) broken.push(`${target} (no file ${resolved})`);
      else if (anchor && !anchors(read(resolved)).has(anchor)) broken.push(`${target} (no heading #${anchor})`);
    }
    expect(broken).toEqual([]);
  });

  it("docs/README.md indexes every page of docs/, and the README links the index", () => {
    const index = links(read("docs/README.md"));
    const unlisted = DOCS.filter((f) => f !== "docs/README.md" && !index.includes(path.basename(f)));
    expect(unlisted).toEqual([]);
    expect(links(read("README.md"))).toContain("docs/README.md");
  });

  it("the README is what a newcomer needs, not the reference: at most 220 lines", () => {
    expect(read("README.md").split("\n").length).toBeLessThanOrEqual(220);
  });

  it("the walkthroughs the readme-walkthrough test runs stay in the README", () => {
    const readme = read("README.md");
    expect(readme).toContain("\n## Try it\n");
    expect(readme).toContain("\n### Try OAuth\n");
  });
});
