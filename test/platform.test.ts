import { env } from "cloudflare:workers";
import { bytesToHex } from "@noble/hashes/utils.js";
import { eq, sql } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { auditOutbox } from "../src/db/schema";
import { hmacSha256 } from "../src/platform/crypto";
import { db, insertSelect } from "../src/platform/db";
import { htmlToText } from "../src/platform/html";
import { literalLimit } from "../src/platform/limit";
import { logError, logWarning } from "../src/platform/log";

describe("platform helpers", () => {
  afterEach(() => vi.restoreAllMocks());

  it("hmacSha256 matches RFC 4231 test case 2", () => {
    expect(bytesToHex(hmacSha256("Jefe", "what do ya want for nothing?"))).toBe(
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    );
  });

  it("logError writes one JSON line with level, msg, the fields and the error as text", () => {
    const spy = vi.spyOn(console, "error").mockImplementation(() => {});
    logError("thing failed", new Error("boom"), { workspace_id: "w1" });
    logError("no cause");
    expect(spy.mock.calls.map(([line]) => JSON.parse(line as string))).toEqual([
      { level: "error", msg: "thing failed", workspace_id: "w1", error: "Error: boom" },
      { level: "error", msg: "no cause" },
    ]);
  });

  it("logWarning writes the same line at level warn", () => {
    const spy = vi.spyOn(console, "warn").mockImplementation(() => {});
    logWarning("worked around", "why");
    expect(JSON.parse(spy.mock.calls[0]![0] as string)).toEqual({ level: "warn", msg: "worked around", error: "why" });
  });

  it("htmlToText drops tags, scripts and styles, keeps inline words whole and decodes references", () => {
    expect(htmlToText("The <strong>Moon</strong>&#39;s pull")).toBe("The Moon's pull");
    expect(htmlToText("<b>Cloud</b>flare")).toBe("Cloudflare");
    expect(htmlToText("<p>Hello</p><p>world</p><br>again")).toBe("Hello world again");
    expect(htmlToText("<style>p{color:red}</style><script>alert(1)</script>Hi &amp; bye")).toBe("Hi & bye");
  });
});

describe("insertSelect", () => {
  const row = (id: string) => ({ id, workspaceId: "ws-insert-select", event: "{}", createdAt: "2026-01-01T00:00:00Z" });
  const stored = (id: string) => db(env).select().from(auditOutbox).where(eq(auditOutbox.id, id)).get();

  it("writes the row only when its condition holds, a left-out column taking its declared default", async () => {
    const refused = await insertSelect(db(env), auditOutbox, row("refused"), sql`WHERE 1 = 0`).run();
    expect(refused.meta.changes).toBe(0);
    expect(await stored("refused")).toBeUndefined();
    await insertSelect(db(env), auditOutbox, row("written"), sql`WHERE 1 = 1`).run();
    expect(await stored("written")).toEqual({ ...row("written"), attempts: 0, lastError: null });
  });

  it("writes one row per row its source selects, with values computed from them", async () => {
    await db(env).insert(auditOutbox).values(row("source")).run();
    await insertSelect(
      db(env),
      auditOutbox,
      { ...row(""), id: sql`'copy-' || ${auditOutbox.id}` },
      sql`FROM ${auditOutbox} WHERE ${auditOutbox.id} IN ('source', 'absent')`,
    ).run();
    expect(await stored("copy-source")).toMatchObject({ workspaceId: "ws-insert-select", attempts: 0 });
    expect(await stored("copy-absent")).toBeUndefined();
  });
});

describe("literalLimit", () => {
  it("writes the LIMIT into the statement's text, binding nothing for it, and limits the rows", async () => {
    const query = db(env).select({ n: sql<number>`value` }).from(sql`json_each('[1,2,3,4,5]')`);
    // biome-ignore lint/plugin: the bound LIMIT that literalLimit replaces, for comparison
    const bound = query.limit(3).toSQL();
    expect(bound.sql).toMatch(/ limit \?$/);
    expect(bound.params).toEqual([3]);

    const literal = query.limit(literalLimit(3)).toSQL();
    expect(literal.sql).toMatch(/ limit 3$/);
    expect(literal.params).toEqual([]);
    expect((await query.limit(literalLimit(3))).map((r) => r.n)).toEqual([1, 2, 3]);
    expect(await query.limit(literalLimit(0))).toEqual([]);
  });

  it("takes only whole numbers of 0 or more, so nothing else reaches the SQL text", () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53])
      expect(() => literalLimit(bad)).toThrow(RangeError);
  });
});
